//! The `/api/tree` family. OpenTSDB's quirk: only physical GET and POST reach these
//! endpoints; PUT and DELETE are spelled `GET …&method_override=put|delete`.

use super::{
    api_method, has_content, json_body, method_not_allowed, ok_json, qs_bool, qs_int, status_only,
    tsuid_list, HResult, HttpError,
};
use crate::meta::json::esc;
use crate::meta::tree::branch::{self, tree_key};
use crate::meta::tree::rule::TreeRuleUpdate;
use crate::meta::tree::{self, builder, check_tree_id, CompiledTree, TreeUpdate};
use crate::meta::{tsmeta, MetaError};
use crate::schema::{hex_upper, parse_hex};
use crate::server::http::Request;
use crate::server::state::OpenTsdb;
use http::{Method, StatusCode};

pub fn route(st: &OpenTsdb, req: &Request, path: &str) -> HResult {
    if req.method != Method::GET && req.method != Method::POST {
        return Err(method_not_allowed(&req.method));
    }
    let sub = path
        .strip_prefix("/api/tree")
        .unwrap_or("")
        .trim_matches('/');
    let res = match sub {
        "" => tree_endpoint(st, req),
        "rule" => rule(st, req),
        "rules" => rules(st, req),
        "branch" => branch(st, req),
        "test" => test(st, req),
        "collisions" => failures(st, req, tree::COLLISION_ROW_SUFFIX),
        "notmatched" => failures(st, req, tree::NOT_MATCHED_ROW_SUFFIX),
        _ => Err(HttpError::new(
            StatusCode::NOT_FOUND,
            "This endpoint is not supported",
        )),
    };
    // Anything that may have changed a tree or its rules: realtime processing reloads.
    if api_method(req).is_ok_and(|m| m != Method::GET) {
        st.meta.trees.invalidate();
    }
    res
}

fn unsupported() -> HttpError {
    HttpError::bad("Unsupported HTTP request method")
}

/// `treeid` from the query string (`None` when absent).
fn qs_tree_id(req: &Request) -> Result<Option<u16>, HttpError> {
    match req.param("treeid").or_else(|| req.param("treeId")) {
        None => Ok(None),
        Some(v) => {
            let id: i64 = v
                .trim()
                .parse()
                .map_err(|_| HttpError::bad("Unable to parse the tree ID"))?;
            Ok(Some(check_tree_id(id)?))
        }
    }
}

fn required_tree_id(req: &Request) -> Result<u16, HttpError> {
    qs_tree_id(req)?.ok_or_else(|| HttpError::bad("Missing tree ID"))
}

fn tree_endpoint(st: &OpenTsdb, req: &Request) -> HResult {
    let ctx = &st.meta.ctx;
    let method = api_method(req)?;
    let upd: TreeUpdate = if has_content(req) && method != Method::DELETE {
        json_body(req)?
    } else {
        TreeUpdate {
            tree_id: qs_tree_id(req)?.map(i64::from),
            name: req.param("name"),
            description: req.param("description"),
            notes: req.param("notes"),
            strict_match: qs_bool(req, "strict_match"),
            enabled: qs_bool(req, "enabled"),
            store_failures: qs_bool(req, "store_failures"),
        }
    };
    let id = upd
        .tree_id
        .filter(|&t| t != 0)
        .map(check_tree_id)
        .transpose()?;
    match method {
        Method::GET => match id {
            None => {
                let all = tree::fetch_all(ctx)?;
                ok_json(format!(
                    "[{}]",
                    all.iter()
                        .map(|t| t.api_json())
                        .collect::<Vec<_>>()
                        .join(",")
                ))
            }
            Some(id) => ok_json(tree::fetch_required(ctx, id)?.api_json()),
        },
        Method::POST | Method::PUT => match id {
            Some(id) => ok_json(tree::update(ctx, id, &upd, method == Method::PUT)?.api_json()),
            None => ok_json(tree::create(ctx, &upd)?.api_json()),
        },
        Method::DELETE => {
            let (id, definition) = if has_content(req) {
                let v: serde_json::Value = json_body(req)?;
                let id = v
                    .get("treeId")
                    .and_then(|t| t.as_i64())
                    .ok_or_else(|| HttpError::bad("Missing tree ID"))?;
                let def = match v.get("definition") {
                    Some(serde_json::Value::Bool(b)) => *b,
                    Some(serde_json::Value::String(s)) => {
                        matches!(s.to_ascii_lowercase().as_str(), "true" | "1" | "yes")
                    }
                    _ => false,
                };
                (check_tree_id(id)?, def)
            } else {
                (
                    id.ok_or_else(|| HttpError::bad("Missing tree ID"))?,
                    qs_bool(req, "definition").unwrap_or(false),
                )
            };
            tree::fetch_required(ctx, id)?;
            tree::delete(ctx, id, definition)?;
            Ok(status_only(StatusCode::NO_CONTENT))
        }
        _ => Err(unsupported()),
    }
}

fn rule_from_qs(req: &Request) -> Result<TreeRuleUpdate, HttpError> {
    Ok(TreeRuleUpdate {
        kind: req.param("type"),
        field: req.param("field"),
        regex: req.param("regex"),
        separator: req.param("separator"),
        description: req.param("description"),
        notes: req.param("notes"),
        level: qs_int(req, "level")?,
        order: qs_int(req, "order")?,
        tree_id: qs_tree_id(req)?.map(i32::from),
        custom_field: req.param("custom_field"),
        regex_group_idx: qs_int(req, "regex_group_idx")?,
        display_format: req.param("display_format"),
    })
}

fn rule(st: &OpenTsdb, req: &Request) -> HResult {
    let ctx = &st.meta.ctx;
    let method = api_method(req)?;
    let upd: TreeRuleUpdate = if has_content(req) {
        json_body(req)?
    } else {
        rule_from_qs(req)?
    };
    let (tree, level, order) = tree::rule_address(ctx, &upd)?;
    let missing = || {
        let mut r = crate::meta::tree::rule::TreeRule {
            level,
            order,
            tree_id: tree.tree_id as i32,
            ..Default::default()
        };
        let _ = upd.apply_to(&mut r);
        HttpError::new(StatusCode::NOT_FOUND, format!("Unable to locate rule: {r}"))
    };
    match method {
        Method::GET => ok_json(tree.rule(level, order).ok_or_else(missing)?.to_json()),
        Method::POST | Method::PUT => {
            ok_json(tree::sync_rule(ctx, &upd, method == Method::PUT)?.to_json())
        }
        Method::DELETE => {
            tree.rule(level, order).ok_or_else(missing)?;
            tree::delete_rule(ctx, tree.tree_id, level, order)?;
            Ok(status_only(StatusCode::NO_CONTENT))
        }
        _ => Err(unsupported()),
    }
}

fn rules(st: &OpenTsdb, req: &Request) -> HResult {
    let ctx = &st.meta.ctx;
    let method = api_method(req)?;
    let (tree_id, list) = if has_content(req) {
        let list: Vec<TreeRuleUpdate> = json_body(req)?;
        let first = list
            .first()
            .ok_or_else(|| HttpError::bad("Missing tree rules"))?
            .tree_id
            .unwrap_or(0);
        if list.iter().any(|r| r.tree_id.unwrap_or(0) != first) {
            return Err(HttpError::bad("All rules must belong to the same tree"));
        }
        (check_tree_id(first as i64)?, Some(list))
    } else {
        (required_tree_id(req)?, None)
    };
    tree::fetch_required(ctx, tree_id)?;
    match method {
        Method::POST | Method::PUT => {
            let list = list.ok_or_else(|| HttpError::bad("Missing tree rules"))?;
            if method == Method::PUT {
                tree::delete_all_rules(ctx, tree_id)?;
            }
            for r in &list {
                match tree::sync_rule(ctx, r, method == Method::PUT) {
                    Ok(_) | Err(MetaError::NotModified) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Ok(status_only(StatusCode::NO_CONTENT))
        }
        Method::DELETE => {
            tree::delete_all_rules(ctx, tree_id)?;
            Ok(status_only(StatusCode::NO_CONTENT))
        }
        _ => Err(unsupported()),
    }
}

fn branch(st: &OpenTsdb, req: &Request) -> HResult {
    if api_method(req)? != Method::GET {
        return Err(unsupported());
    }
    let id = match req
        .param("branch")
        .or_else(|| req.param("branchid"))
        .or_else(|| req.param("branchId"))
        .filter(|b| !b.is_empty())
    {
        Some(hex) => parse_hex(&hex)
            .filter(|b| b.len() >= 2)
            .ok_or_else(|| HttpError::bad(format!("Invalid branch ID: {hex}")))?,
        None => tree_key(required_tree_id(req)?),
    };
    match branch::fetch(&st.meta.ctx, &id)? {
        Some(b) => ok_json(b.api_json()),
        None => Err(HttpError::new(
            StatusCode::NOT_FOUND,
            format!(
                "Unable to locate branch '{}' for tree '{}'",
                hex_upper(&id),
                u16::from_be_bytes([id[0], id[1]])
            ),
        )),
    }
}

fn test(st: &OpenTsdb, req: &Request) -> HResult {
    let ctx = &st.meta.ctx;
    if api_method(req)? != Method::GET {
        return Err(unsupported());
    }
    let tree_id = required_tree_id(req)?;
    let tsuids = req
        .param("tsuids")
        .filter(|t| !t.is_empty())
        .ok_or_else(|| HttpError::bad("Missing TSUIDs"))?;
    let tree = tree::fetch_required(ctx, tree_id)?;
    let compiled = CompiledTree::new(tree).map_err(|e| HttpError::bad(e.to_string()))?;
    let mut out = Vec::new();
    for t in tsuids.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let meta = parse_hex(t)
            .ok_or(())
            .and_then(|b| tsmeta::load_or_blank(ctx, &b).map_err(|_| ()));
        let body = match meta {
            Err(()) => {
                r#"{"branch":null,"messages":["Unable to locate TSUID meta data"],"meta":null}"#
                    .to_string()
            }
            Ok(meta) => {
                let built = builder::build(&compiled, &meta);
                let view = builder::preview(&compiled.tree, &built, &meta.tsuid);
                let msgs: Vec<String> = built.messages.iter().map(|m| esc(m)).collect();
                format!(
                    "{{\"messages\":[{}],\"meta\":{},\"branch\":{}}}",
                    msgs.join(","),
                    meta.api_json(),
                    view.map(|v| v.api_json()).unwrap_or_else(|| "null".into())
                )
            }
        };
        out.push(format!("{}:{body}", esc(t)));
    }
    ok_json(format!("{{{}}}", out.join(",")))
}

fn failures(st: &OpenTsdb, req: &Request, suffix: u8) -> HResult {
    let ctx = &st.meta.ctx;
    if api_method(req)? != Method::GET {
        return Err(unsupported());
    }
    let tree_id = required_tree_id(req)?;
    tree::fetch_required(ctx, tree_id)?;
    let only = tsuid_list(&req.param("tsuids").unwrap_or_default())?;
    let entries = tree::failures(ctx, tree_id, suffix, &only)?;
    let body: Vec<String> = entries
        .iter()
        .map(|(k, v)| format!("{}:{}", esc(k), esc(v)))
        .collect();
    ok_json(format!("{{{}}}", body.join(",")))
}
