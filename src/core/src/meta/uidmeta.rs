//! UIDMeta: descriptive fields of a metric/tagk/tagv UID, stored in `tsdb-uid` in the UID's
//! reverse-map row under `name:<kind>_meta` (`metric_meta`, `tagk_meta`, `tagv_meta`). The
//! UID and its name are not stored in the JSON: they come from the row key and `name:<kind>`.

use super::json::{custom_json, esc, StrMap};
use super::{MetaCtx, MetaError, MetaResult};
use crate::uid::UidError;
use tsgate_schema::hex_upper;
use tsgate_schema::uid_table::{UidKind, NAME_FAMILY};
use tsgate_store::{Mutation, RowMutations};

#[derive(Debug, Clone, Default, PartialEq)]
pub struct UidMeta {
    /// Upper-case hex.
    pub uid: String,
    pub kind: Option<UidKind>,
    pub name: String,
    pub display_name: String,
    pub description: String,
    pub notes: String,
    pub created: u64,
    pub custom: Option<StrMap>,
}

/// OpenTSDB's `UniqueIdType` names.
pub fn kind_name(k: UidKind) -> &'static str {
    match k {
        UidKind::Metric => "METRIC",
        UidKind::Tagk => "TAGK",
        UidKind::Tagv => "TAGV",
    }
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    #[serde(default)]
    display_name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    notes: Option<String>,
    #[serde(default)]
    created: u64,
    #[serde(default)]
    custom: Option<StrMap>,
}

impl UidMeta {
    /// An unstored meta: what GET answers for a UID that has no meta cell.
    pub fn blank(kind: UidKind, uid: &[u8], name: &str) -> UidMeta {
        UidMeta {
            uid: hex_upper(uid),
            kind: Some(kind),
            name: name.into(),
            ..Default::default()
        }
    }

    /// `{"type":..,"displayName":..,"description":..,"notes":..,"created":..,"custom":..}`.
    pub fn storage_json(&self) -> String {
        format!(
            "{{\"type\":{},\"displayName\":{},\"description\":{},\"notes\":{},\"created\":{},\"custom\":{}}}",
            self.kind.map(|k| esc(kind_name(k))).unwrap_or_else(|| "null".into()),
            esc(&self.display_name),
            esc(&self.description),
            esc(&self.notes),
            self.created,
            custom_json(&self.custom, false)
        )
    }

    /// The API form, Jackson order: uid, type, name, description, notes, created, custom,
    /// displayName.
    pub fn api_json(&self) -> String {
        format!(
            "{{\"uid\":{},\"type\":{},\"name\":{},\"description\":{},\"notes\":{},\"created\":{},\"custom\":{},\"displayName\":{}}}",
            esc(&self.uid),
            self.kind.map(|k| esc(kind_name(k))).unwrap_or_else(|| "null".into()),
            esc(&self.name),
            esc(&self.description),
            esc(&self.notes),
            self.created,
            custom_json(&self.custom, false),
            esc(&self.display_name)
        )
    }

    fn from_storage(kind: UidKind, uid: &[u8], name: &str, v: &[u8]) -> MetaResult<UidMeta> {
        let s: Stored = serde_json::from_slice(v).map_err(|e| {
            MetaError::CasFailed(format!("Unable to parse the stored UIDMeta: {e}"))
        })?;
        Ok(UidMeta {
            uid: hex_upper(uid),
            kind: Some(kind),
            name: name.into(),
            display_name: s.display_name.unwrap_or_default(),
            description: s.description.unwrap_or_default(),
            notes: s.notes.unwrap_or_default(),
            created: s.created,
            custom: s.custom,
        })
    }
}

/// The name of a UID, or OpenTSDB's 404.
pub fn uid_name(ctx: &MetaCtx, kind: UidKind, uid: &[u8]) -> MetaResult<String> {
    match ctx.uids.get_name(kind, uid) {
        Ok(n) => Ok(n.into()),
        Err(UidError::NoSuchId { .. }) => Err(MetaError::NotFound(
            "Could not find the requested UID".into(),
        )),
        Err(e) => Err(e.into()),
    }
}

fn read(
    ctx: &MetaCtx,
    kind: UidKind,
    uid: &[u8],
    name: &str,
) -> MetaResult<Option<(UidMeta, Vec<u8>)>> {
    let cells = ctx.store.get(&ctx.tables.uid, uid, &[NAME_FAMILY])?;
    match cells
        .into_iter()
        .find(|c| c.qualifier == kind.meta_qualifier())
    {
        Some(c) => Ok(Some((
            UidMeta::from_storage(kind, uid, name, &c.value)?,
            c.value,
        ))),
        None => Ok(None),
    }
}

/// The meta of a UID (a blank one when none is stored); 404 when the UID does not exist.
pub fn load(ctx: &MetaCtx, kind: UidKind, uid: &[u8]) -> MetaResult<UidMeta> {
    let name = uid_name(ctx, kind, uid)?;
    Ok(read(ctx, kind, uid, &name)?
        .map(|x| x.0)
        .unwrap_or_else(|| UidMeta::blank(kind, uid, &name)))
}

/// What a POST/PUT carried; `None` = not set by the caller.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UidMetaUpdate {
    #[serde(default)]
    pub uid: Option<String>,
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub display_name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub notes: Option<String>,
    #[serde(default)]
    pub created: Option<u64>,
    #[serde(default)]
    pub custom: Option<StrMap>,
}

fn set(v: &Option<String>) -> Option<&String> {
    v.as_ref().filter(|s| !s.is_empty())
}

impl UidMetaUpdate {
    pub fn target(&self) -> MetaResult<(UidKind, Vec<u8>)> {
        let uid = self
            .uid
            .as_deref()
            .filter(|u| !u.is_empty())
            .ok_or_else(|| MetaError::bad("Missing UID"))?;
        let kind = self
            .kind
            .as_deref()
            .filter(|u| !u.is_empty())
            .ok_or_else(|| MetaError::bad("Missing type"))?;
        let kind =
            UidKind::parse(kind).ok_or_else(|| MetaError::bad(format!("Invalid type: {kind}")))?;
        Ok((kind, super::parse_uid_hex(uid, "UID")?))
    }

    /// Changes count against a blank object, as OpenTSDB's setters track them.
    fn changed(&self) -> bool {
        set(&self.display_name).is_some()
            || set(&self.description).is_some()
            || set(&self.notes).is_some()
            || self.custom.is_some()
            || self.created.is_some_and(|c| c != 0)
    }

    fn apply(&self, stored: Option<UidMeta>, blank: UidMeta, overwrite: bool) -> UidMeta {
        let stored_created = stored.as_ref().map(|s| s.created).unwrap_or(0);
        let base = match (stored, overwrite) {
            (Some(s), false) => s,
            _ => blank,
        };
        let req_created = self.created.unwrap_or(0);
        // The earliest known creation time wins.
        let created = match (stored_created, req_created) {
            (0, c) | (c, 0) => c,
            (a, b) => a.min(b),
        };
        UidMeta {
            display_name: set(&self.display_name)
                .cloned()
                .unwrap_or(base.display_name),
            description: set(&self.description).cloned().unwrap_or(base.description),
            notes: set(&self.notes).cloned().unwrap_or(base.notes),
            custom: self.custom.clone().or(base.custom),
            created,
            ..base
        }
    }
}

/// POST (merge) / PUT (replace) of a UIDMeta, compare-and-set against the stored JSON.
pub fn sync(ctx: &MetaCtx, req: &UidMetaUpdate, overwrite: bool) -> MetaResult<UidMeta> {
    let (kind, uid) = req.target()?;
    if !req.changed() {
        return Err(MetaError::NotModified);
    }
    let name = uid_name(ctx, kind, &uid)?;
    let (stored, token) = match read(ctx, kind, &uid, &name)? {
        Some((m, b)) => (Some(m), Some(b)),
        None => (None, None),
    };
    let meta = req.apply(stored, UidMeta::blank(kind, &uid, &name), overwrite);
    let ok = ctx.store.check_and_put(
        &ctx.tables.uid,
        &uid,
        NAME_FAMILY,
        kind.meta_qualifier(),
        token.as_deref(),
        meta.storage_json().as_bytes(),
    )?;
    if !ok {
        return Err(MetaError::CasFailed(
            "Failed to save the UIDMeta to storage".into(),
        ));
    }
    load(ctx, kind, &uid)
}

/// Removes the meta cell only (the UID stays).
pub fn delete(ctx: &MetaCtx, kind: UidKind, uid: &[u8]) -> MetaResult<()> {
    uid_name(ctx, kind, uid)?;
    ctx.store.mutate(
        &ctx.tables.uid,
        vec![RowMutations {
            row: uid.to_vec(),
            mutations: vec![Mutation::Delete {
                family: NAME_FAMILY.to_vec(),
                qualifier: kind.meta_qualifier().to_vec(),
            }],
        }],
    )?;
    Ok(())
}

/// Realtime creation: writes a fresh meta (created = `now`) unless one exists.
pub fn create_if_absent(ctx: &MetaCtx, kind: UidKind, uid: &[u8], now: u64) -> MetaResult<bool> {
    let meta = UidMeta {
        kind: Some(kind),
        created: now,
        ..Default::default()
    };
    Ok(ctx.store.check_and_put(
        &ctx.tables.uid,
        uid,
        NAME_FAMILY,
        kind.meta_qualifier(),
        None,
        meta.storage_json().as_bytes(),
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_forms() {
        let blank = UidMeta::default();
        assert_eq!(
            blank.api_json(),
            r#"{"uid":"","type":null,"name":"","description":"","notes":"","created":0,"custom":null,"displayName":""}"#
        );
        let m = UidMeta {
            uid: "000001".into(),
            kind: Some(UidKind::Metric),
            name: "sys.cpu.0".into(),
            display_name: "System CPU".into(),
            description: "d".into(),
            notes: "n".into(),
            created: 1328140800,
            custom: Some(StrMap(vec![("owner".into(), Some("jdoe".into()))])),
        };
        assert_eq!(
            m.storage_json(),
            r#"{"type":"METRIC","displayName":"System CPU","description":"d","notes":"n","created":1328140800,"custom":{"owner":"jdoe"}}"#
        );
        assert_eq!(
            m.api_json(),
            r#"{"uid":"000001","type":"METRIC","name":"sys.cpu.0","description":"d","notes":"n","created":1328140800,"custom":{"owner":"jdoe"},"displayName":"System CPU"}"#
        );
        let back = UidMeta::from_storage(
            UidKind::Metric,
            &[0, 0, 1],
            "sys.cpu.0",
            m.storage_json().as_bytes(),
        )
        .unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn merge_and_replace() {
        let stored = UidMeta {
            description: "d".into(),
            notes: "n".into(),
            created: 50,
            kind: Some(UidKind::Tagk),
            ..Default::default()
        };
        let req = UidMetaUpdate {
            notes: Some("x".into()),
            created: Some(10),
            ..Default::default()
        };
        let blank = UidMeta {
            kind: Some(UidKind::Tagk),
            ..Default::default()
        };
        let m = req.apply(Some(stored.clone()), blank.clone(), false);
        assert_eq!(
            (m.description.as_str(), m.notes.as_str(), m.created),
            ("d", "x", 10)
        );
        let p = req.apply(Some(stored), blank, true);
        assert_eq!((p.description.as_str(), p.notes.as_str()), ("", "x"));
        assert!(!UidMetaUpdate {
            description: Some(String::new()),
            ..Default::default()
        }
        .changed());
    }
}
