//! `/api/uid/uidmeta` and `/api/uid/tsmeta`.

use super::{
    api_method, has_content, json_body, method_not_allowed, ok_json, parse_m, required,
    status_only, HResult, HttpError,
};
use crate::meta::tsmeta::{self, TsMetaUpdate};
use crate::meta::uidmeta::{self, UidMetaUpdate};
use crate::meta::{MetaCtx, MetaError};
use crate::schema::uid_table::UidKind;
use crate::server::http::Request;
use crate::server::state::OpenTsdb;
use http::{Method, StatusCode};

fn uid_target(req: &Request) -> Result<(UidKind, Vec<u8>), HttpError> {
    let upd = UidMetaUpdate {
        uid: Some(required(req, "uid")?),
        kind: Some(required(req, "type")?),
        ..Default::default()
    };
    Ok(upd.target()?)
}

pub fn uidmeta(st: &OpenTsdb, req: &Request) -> HResult {
    let ctx = &st.meta.ctx;
    match api_method(req)? {
        Method::GET => {
            let (kind, uid) = uid_target(req)?;
            ok_json(uidmeta::load(ctx, kind, &uid)?.api_json())
        }
        m @ (Method::POST | Method::PUT) => {
            let upd: UidMetaUpdate = if has_content(req) {
                json_body(req)?
            } else {
                UidMetaUpdate {
                    uid: Some(required(req, "uid")?),
                    kind: Some(required(req, "type")?),
                    display_name: req.param("display_name"),
                    description: req.param("description"),
                    notes: req.param("notes"),
                    ..Default::default()
                }
            };
            ok_json(uidmeta::sync(ctx, &upd, m == Method::PUT)?.api_json())
        }
        Method::DELETE => {
            let (kind, uid) = if has_content(req) {
                json_body::<UidMetaUpdate>(req)?.target()?
            } else {
                uid_target(req)?
            };
            uidmeta::delete(ctx, kind, &uid)?;
            Ok(status_only(StatusCode::NO_CONTENT))
        }
        m => Err(method_not_allowed(&m)),
    }
}

/// `metric{tags}` → TSUID of that exact series (UIDs must exist).
fn tsuid_of(st: &OpenTsdb, m: &str) -> Result<Vec<u8>, HttpError> {
    let (metric, tags) = parse_m(m)?;
    let tags: Vec<(String, String)> = tags
        .into_iter()
        .map(|(k, v)| (k, v.unwrap_or_default()))
        .collect();
    let t: Vec<(&str, &str)> = tags.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    Ok(st
        .resolver
        .lookup(&metric, &t)
        .map_err(MetaError::from)?
        .to_vec())
}

fn find_m(ctx: &MetaCtx, m: &str) -> HResult {
    let (metric, tags) = parse_m(m)?;
    let not_found = |e: crate::uid::UidError| -> HttpError {
        match e {
            crate::uid::UidError::NoSuchName { .. } => {
                HttpError::new(StatusCode::NOT_FOUND, "Unable to find one of the UIDs")
            }
            e => MetaError::from(e).into(),
        }
    };
    let mid = ctx
        .uids
        .require_id(UidKind::Metric, &metric)
        .map_err(not_found)?;
    let mut pairs = Vec::new();
    for (k, v) in tags {
        let k = ctx
            .uids
            .require_id(UidKind::Tagk, &k)
            .map_err(not_found)?
            .to_vec();
        let v = match v {
            Some(v) => Some(
                ctx.uids
                    .require_id(UidKind::Tagv, &v)
                    .map_err(not_found)?
                    .to_vec(),
            ),
            None => None,
        };
        pairs.push((k, v));
    }
    let metas = tsmeta::find(ctx, &mid, &pairs)?;
    ok_json(format!(
        "[{}]",
        metas
            .iter()
            .map(|m| m.api_json())
            .collect::<Vec<_>>()
            .join(",")
    ))
}

pub fn tsmeta(st: &OpenTsdb, req: &Request) -> HResult {
    let ctx = &st.meta.ctx;
    match api_method(req)? {
        Method::GET => match req.param("tsuid") {
            Some(t) => {
                ok_json(tsmeta::load(ctx, &crate::meta::parse_uid_hex(&t, "TSUID")?)?.api_json())
            }
            None => find_m(ctx, &required(req, "m")?),
        },
        m @ (Method::POST | Method::PUT) => {
            let mut upd: TsMetaUpdate = if has_content(req) {
                json_body(req)?
            } else {
                let num = |k: &str| req.param(k).map(serde_json::Value::String);
                TsMetaUpdate {
                    tsuid: req.param("tsuid"),
                    display_name: req.param("display_name"),
                    description: req.param("description"),
                    notes: req.param("notes"),
                    units: req.param("units"),
                    data_type: req.param("data_type"),
                    retention: super::qs_int(req, "retention")?,
                    max: num("max"),
                    min: num("min"),
                    ..Default::default()
                }
            };
            let create = req.param("create").is_some_and(|c| c == "true");
            if create {
                if let Some(m) = req.param("m") {
                    upd.tsuid = Some(crate::schema::hex_upper(&tsuid_of(st, &m)?));
                }
            }
            let tsuid = upd.tsuid_bytes()?;
            ok_json(tsmeta::sync(ctx, &tsuid, &upd, m == Method::PUT, create)?.api_json())
        }
        Method::DELETE => {
            let t = if has_content(req) {
                json_body::<TsMetaUpdate>(req)?.tsuid_bytes()?
            } else {
                crate::meta::parse_uid_hex(&required(req, "tsuid")?, "TSUID")?
            };
            tsmeta::delete(ctx, &t)?;
            Ok(status_only(StatusCode::NO_CONTENT))
        }
        m => Err(method_not_allowed(&m)),
    }
}

/// `/api/uid/rename`: GET `?metric|tagk|tagv=<old>&name=<new>` or POST the same as a JSON
/// object → `{"result":"true"}`; a refused rename (unknown old name, new name taken, invalid
/// name) → 400 `{"result":"false","error":..}` as OpenTSDB answers it.
pub fn rename(st: &OpenTsdb, req: &Request) -> HResult {
    let source: Vec<(String, String)> = match req.method {
        Method::POST => {
            let m: std::collections::BTreeMap<String, serde_json::Value> = json_body(req)?;
            m.into_iter()
                .filter_map(|(k, v)| v.as_str().map(|s| (k, s.to_string())))
                .collect()
        }
        Method::GET => ["metric", "tagk", "tagv", "name"]
            .into_iter()
            .filter_map(|k| {
                req.param(k)
                    .filter(|v| !v.is_empty())
                    .map(|v| (k.into(), v))
            })
            .collect(),
        ref m => return Err(method_not_allowed(m)),
    };
    let (mut kind, mut old, mut new) = (None, None, None);
    for (k, v) in source {
        if k == "name" {
            new = Some(v);
        } else {
            (kind, old) = (Some(k), Some(v));
        }
    }
    let (Some(kind), Some(old), Some(new)) = (kind, old, new) else {
        return Err(HttpError::bad("Missing necessary values to rename UID"));
    };
    match rename_uid(st, &kind, &old, &new) {
        Ok(()) => ok_json(r#"{"result":"true"}"#.into()),
        Err(e) => Ok(crate::server::http::json_reply(
            StatusCode::BAD_REQUEST,
            serde_json::json!({"result": "false", "error": e.to_string()}).to_string(),
        )),
    }
}

/// Why `/api/uid/rename` refused; `Display` is OpenTSDB's wording.
#[derive(Debug, thiserror::Error)]
enum RenameError {
    #[error(transparent)]
    Name(#[from] tsgate_opentsdb::NameError),
    #[error("Unknown type name")]
    UnknownType,
    #[error("Name(\"{0}\") does not exist")]
    NoSuchName(String),
    /// `table`, `kind` and `width` name OpenTSDB's `UniqueId`; `id` is the taken ID as a Java
    /// byte array.
    #[error(
        "When trying rename(\"{old}\", \"{new}\") on UniqueId({table}, {kind}, {width}): new name \
         already assigned ID=[{id}]"
    )]
    Taken {
        old: String,
        new: String,
        table: String,
        kind: &'static str,
        width: usize,
        id: String,
    },
    #[error(transparent)]
    Uid(crate::uid::UidError),
}

/// OpenTSDB's `TSDB.renameUid`, its refusals worded as it words them.
fn rename_uid(st: &OpenTsdb, kind: &str, old: &str, new: &str) -> Result<(), RenameError> {
    let allow = &st.limits.allow_special;
    tsgate_opentsdb::names::validate(old, kind, allow)?;
    tsgate_opentsdb::names::validate(new, kind, allow)?;
    let k = match kind.to_ascii_lowercase().as_str() {
        "metric" => UidKind::Metric,
        "tagk" => UidKind::Tagk,
        "tagv" => UidKind::Tagv,
        _ => return Err(RenameError::UnknownType),
    };
    let uids = st.resolver.uids();
    match uids.rename(k, old, new) {
        Ok(_) => {
            // Cached name → TSUID entries of the old name must not outlive it.
            st.resolver.drop_caches();
            st.graphite_index.invalidate();
            Ok(())
        }
        Err(crate::uid::UidError::NoSuchName { .. }) => Err(RenameError::NoSuchName(old.into())),
        Err(crate::uid::UidError::Exists(_)) => {
            let id = uids.get_id(k, new).ok().flatten().unwrap_or_default();
            let signed: Vec<String> = id.iter().map(|&b| (b as i8).to_string()).collect();
            Err(RenameError::Taken {
                old: old.into(),
                new: new.into(),
                table: st.meta.ctx.tables.uid.clone(),
                kind: k.as_str(),
                width: id.len(),
                id: signed.join(", "),
            })
        }
        Err(e) => Err(RenameError::Uid(e)),
    }
}
