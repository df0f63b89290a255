//! TSMeta: descriptive fields of one series, stored in `tsdb-meta` under the TSUID row as
//! `name:ts_meta` (JSON), next to the `name:ts_ctr` counter whose value is the series' point
//! count and whose cell timestamp is when it last received a point.

use super::json::{custom_json, double_or_nan, esc, java_double_json, StrMap};
use super::uidmeta::{self, UidMeta};
use super::{MetaCtx, MetaError, MetaResult};
use tsgate_schema::hex_upper;
use tsgate_schema::uid_table::{
    decode_counter, UidKind, META_FAMILY, TS_COUNTER_QUALIFIER, TS_META_QUALIFIER,
};
use tsgate_store::{Mutation, RowMutations, Scan};

#[derive(Debug, Clone, PartialEq)]
pub struct TsMeta {
    pub tsuid: String,
    pub display_name: String,
    pub description: String,
    pub notes: String,
    pub created: u64,
    pub custom: Option<StrMap>,
    pub units: String,
    pub data_type: String,
    pub retention: i64,
    pub max: f64,
    pub min: f64,
    /// API-only: the UIDMetas of the metric and of the tags (tagk, tagv, … in TSUID order),
    /// and the counter-derived fields.
    pub metric: Option<UidMeta>,
    pub tags: Vec<UidMeta>,
    pub last_received: u64,
    pub total_datapoints: i64,
}

impl Default for TsMeta {
    fn default() -> Self {
        TsMeta {
            tsuid: String::new(),
            display_name: String::new(),
            description: String::new(),
            notes: String::new(),
            created: 0,
            custom: None,
            units: String::new(),
            data_type: String::new(),
            retention: 0,
            max: f64::NAN,
            min: f64::NAN,
            metric: None,
            tags: Vec::new(),
            last_received: 0,
            total_datapoints: 0,
        }
    }
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    #[serde(default)]
    tsuid: Option<String>,
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
    #[serde(default)]
    units: Option<String>,
    #[serde(default)]
    data_type: Option<String>,
    #[serde(default)]
    retention: i64,
    #[serde(default)]
    max: Option<serde_json::Value>,
    #[serde(default)]
    min: Option<serde_json::Value>,
}

impl TsMeta {
    pub fn new(tsuid: &[u8], created: u64) -> TsMeta {
        TsMeta {
            tsuid: hex_upper(tsuid),
            created,
            ..Default::default()
        }
    }

    pub fn storage_json(&self) -> String {
        format!(
            "{{\"tsuid\":{},\"displayName\":{},\"description\":{},\"notes\":{},\"created\":{},\"custom\":{},\"units\":{},\"dataType\":{},\"retention\":{},\"max\":{},\"min\":{}}}",
            esc(&self.tsuid),
            esc(&self.display_name),
            esc(&self.description),
            esc(&self.notes),
            self.created,
            custom_json(&self.custom, false),
            esc(&self.units),
            esc(&self.data_type),
            self.retention,
            java_double_json(self.max),
            java_double_json(self.min)
        )
    }

    /// The API form: tsuid, metric, tags, description, notes, created, units, retention, max,
    /// min, custom, displayName, dataType, lastReceived, totalDatapoints.
    pub fn api_json(&self) -> String {
        let tags: Vec<String> = self.tags.iter().map(|t| t.api_json()).collect();
        format!(
            "{{\"tsuid\":{},\"metric\":{},\"tags\":[{}],\"description\":{},\"notes\":{},\"created\":{},\"units\":{},\"retention\":{},\"max\":{},\"min\":{},\"custom\":{},\"displayName\":{},\"dataType\":{},\"lastReceived\":{},\"totalDatapoints\":{}}}",
            esc(&self.tsuid),
            self.metric.as_ref().map(|m| m.api_json()).unwrap_or_else(|| "null".into()),
            tags.join(","),
            esc(&self.description),
            esc(&self.notes),
            self.created,
            esc(&self.units),
            self.retention,
            java_double_json(self.max),
            java_double_json(self.min),
            custom_json(&self.custom, false),
            esc(&self.display_name),
            esc(&self.data_type),
            self.last_received,
            self.total_datapoints
        )
    }

    pub fn from_storage(v: &[u8]) -> MetaResult<TsMeta> {
        let s: Stored = serde_json::from_slice(v)
            .map_err(|e| MetaError::CasFailed(format!("Unable to parse the stored TSMeta: {e}")))?;
        let dbl =
            |v: Option<serde_json::Value>| v.as_ref().and_then(double_or_nan).unwrap_or(f64::NAN);
        Ok(TsMeta {
            tsuid: s.tsuid.unwrap_or_default(),
            display_name: s.display_name.unwrap_or_default(),
            description: s.description.unwrap_or_default(),
            notes: s.notes.unwrap_or_default(),
            created: s.created,
            custom: s.custom,
            units: s.units.unwrap_or_default(),
            data_type: s.data_type.unwrap_or_default(),
            retention: s.retention,
            max: dbl(s.max),
            min: dbl(s.min),
            ..Default::default()
        })
    }

    /// A tag's value by tag key name (from the loaded UIDMetas).
    pub fn tag_pairs(&self) -> impl Iterator<Item = (&UidMeta, &UidMeta)> {
        self.tags.chunks_exact(2).map(|c| (&c[0], &c[1]))
    }
}

/// The stored TSMeta with its JSON bytes (the CAS token), lastReceived and the counter.
type ReadMeta = (Option<(TsMeta, Vec<u8>)>, u64, i64);

fn read(ctx: &MetaCtx, tsuid: &[u8]) -> MetaResult<ReadMeta> {
    let cells = ctx.store.get(&ctx.tables.meta, tsuid, &[META_FAMILY])?;
    let mut meta = None;
    let (mut last, mut total) = (0, 0);
    for c in cells {
        if c.qualifier == TS_META_QUALIFIER {
            meta = Some((TsMeta::from_storage(&c.value)?, c.value));
        } else if c.qualifier == TS_COUNTER_QUALIFIER {
            total = decode_counter(&c.value).unwrap_or(0);
            last = c.timestamp / 1000;
        }
    }
    Ok((meta, last, total))
}

/// The UIDMetas of a TSUID's metric and tags (names resolved, metas loaded).
pub fn uid_metas(ctx: &MetaCtx, tsuid: &[u8]) -> MetaResult<(UidMeta, Vec<UidMeta>)> {
    let l = &ctx.layout;
    if tsuid.len() < l.metric_width || !(tsuid.len() - l.metric_width).is_multiple_of(l.tag_width())
    {
        return Err(MetaError::bad(format!(
            "Invalid TSUID: {}",
            hex_upper(tsuid)
        )));
    }
    let metric = uidmeta::load(ctx, UidKind::Metric, &tsuid[..l.metric_width])?;
    let mut tags = Vec::new();
    for pair in tsuid[l.metric_width..].chunks_exact(l.tag_width()) {
        let (k, v) = pair.split_at(l.tagk_width);
        tags.push(uidmeta::load(ctx, UidKind::Tagk, k)?);
        tags.push(uidmeta::load(ctx, UidKind::Tagv, v)?);
    }
    Ok((metric, tags))
}

fn complete(
    ctx: &MetaCtx,
    tsuid: &[u8],
    mut meta: TsMeta,
    last: u64,
    total: i64,
) -> MetaResult<TsMeta> {
    let (m, tags) = uid_metas(ctx, tsuid)?;
    meta.metric = Some(m);
    meta.tags = tags;
    meta.last_received = last;
    meta.total_datapoints = total;
    Ok(meta)
}

/// The stored TSMeta with its UIDMetas and counter; 404 when none is stored.
pub fn load(ctx: &MetaCtx, tsuid: &[u8]) -> MetaResult<TsMeta> {
    let (meta, last, total) = read(ctx, tsuid)?;
    let Some((meta, _)) = meta else {
        return Err(MetaError::NotFound(
            "Could not find Timeseries meta data".into(),
        ));
    };
    complete(ctx, tsuid, meta, last, total)
}

/// The stored TSMeta, or a blank one when the series has none (tree processing and tests
/// need the names even when realtime TSMeta creation is off).
pub fn load_or_blank(ctx: &MetaCtx, tsuid: &[u8]) -> MetaResult<TsMeta> {
    let (meta, last, total) = read(ctx, tsuid)?;
    let meta = meta.map(|m| m.0).unwrap_or_else(|| TsMeta::new(tsuid, 0));
    complete(ctx, tsuid, meta, last, total)
}

/// Stored TSMetas of the series of `metric` carrying every given tag (`m=` GETs): a tagk UID
/// with its tagv UID, or with `None` for any value.
pub fn find(
    ctx: &MetaCtx,
    metric: &[u8],
    pairs: &[(Vec<u8>, Option<Vec<u8>>)],
) -> MetaResult<Vec<TsMeta>> {
    let mut stop = metric.to_vec();
    // Rows of this metric: [metric, metric+1).
    let mut carry = true;
    for b in stop.iter_mut().rev() {
        if carry {
            let (n, o) = b.overflowing_add(1);
            *b = n;
            carry = o;
        }
    }
    if carry {
        stop.clear();
    }
    let scan = Scan {
        start: metric.to_vec(),
        stop,
        families: vec![META_FAMILY.to_vec()],
        ..Default::default()
    };
    let tw = ctx.layout.tag_width();
    let mut out = Vec::new();
    for row in ctx.store.scan(&ctx.tables.meta, &scan)? {
        let row = row?;
        let tags = &row.key[metric.len().min(row.key.len())..];
        let kw = ctx.layout.tagk_width;
        let has = |(k, v): &(Vec<u8>, Option<Vec<u8>>)| {
            tags.chunks_exact(tw)
                .any(|c| c[..kw] == k[..] && v.as_ref().is_none_or(|v| c[kw..] == v[..]))
        };
        if tags.len() % tw != 0 || !pairs.iter().all(has) {
            continue;
        }
        if !row.cells.iter().any(|c| c.qualifier == TS_META_QUALIFIER) {
            continue;
        }
        out.push(load(ctx, &row.key)?);
    }
    Ok(out)
}

/// What a POST/PUT carried; `None` = not set.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TsMetaUpdate {
    #[serde(default)]
    pub tsuid: Option<String>,
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
    #[serde(default)]
    pub units: Option<String>,
    #[serde(default)]
    pub data_type: Option<String>,
    #[serde(default)]
    pub retention: Option<i64>,
    #[serde(default)]
    pub max: Option<serde_json::Value>,
    #[serde(default)]
    pub min: Option<serde_json::Value>,
}

fn set(v: &Option<String>) -> Option<&String> {
    v.as_ref().filter(|s| !s.is_empty())
}

impl TsMetaUpdate {
    /// Against a blank object, as OpenTSDB's setters track changes (`max`/`min` count whenever
    /// given: Java's `NaN != NaN`).
    fn changed(&self) -> bool {
        set(&self.display_name).is_some()
            || set(&self.description).is_some()
            || set(&self.notes).is_some()
            || set(&self.units).is_some()
            || set(&self.data_type).is_some()
            || self.custom.is_some()
            || self.created.is_some_and(|c| c != 0)
            || self.retention.is_some_and(|r| r != 0)
            || self.max.is_some()
            || self.min.is_some()
    }

    fn apply(&self, stored: TsMeta, overwrite: bool) -> TsMeta {
        let blank = TsMeta {
            tsuid: stored.tsuid.clone(),
            created: stored.created,
            ..Default::default()
        };
        let base = if overwrite { blank } else { stored.clone() };
        let created = match (stored.created, self.created.unwrap_or(0)) {
            (0, c) | (c, 0) => c,
            (a, b) => a.min(b),
        };
        let dbl = |v: &Option<serde_json::Value>, old: f64| {
            v.as_ref()
                .map(|v| double_or_nan(v).unwrap_or(f64::NAN))
                .unwrap_or(old)
        };
        TsMeta {
            display_name: set(&self.display_name)
                .cloned()
                .unwrap_or(base.display_name),
            description: set(&self.description).cloned().unwrap_or(base.description),
            notes: set(&self.notes).cloned().unwrap_or(base.notes),
            units: set(&self.units).cloned().unwrap_or(base.units),
            data_type: set(&self.data_type).cloned().unwrap_or(base.data_type),
            custom: self.custom.clone().or(base.custom),
            retention: self.retention.filter(|&r| r != 0).unwrap_or(base.retention),
            max: dbl(&self.max, base.max),
            min: dbl(&self.min, base.min),
            created,
            ..base
        }
    }

    pub fn tsuid_bytes(&self) -> MetaResult<Vec<u8>> {
        let t = self
            .tsuid
            .as_deref()
            .filter(|t| !t.is_empty())
            .ok_or_else(|| MetaError::bad("Missing TSUID"))?;
        super::parse_uid_hex(t, "TSUID")
    }
}

/// POST (merge) / PUT (replace) of an existing TSMeta, compare-and-set against the stored
/// JSON. With `create`, a missing TSMeta is created (its UIDs must exist).
pub fn sync(
    ctx: &MetaCtx,
    tsuid: &[u8],
    req: &TsMetaUpdate,
    overwrite: bool,
    create: bool,
) -> MetaResult<TsMeta> {
    let (stored, _, _) = read(ctx, tsuid)?;
    let (stored, token) = match stored {
        Some((m, b)) => (m, Some(b)),
        None if create => {
            uid_metas(ctx, tsuid)?;
            (TsMeta::new(tsuid, tsgate_common::clock::now_s()), None)
        }
        None => {
            return Err(MetaError::NotFound(
                "Could not find Timeseries meta data".into(),
            ))
        }
    };
    if !req.changed() && token.is_some() {
        return Err(MetaError::NotModified);
    }
    let meta = req.apply(stored, overwrite);
    let ok = ctx.store.check_and_put(
        &ctx.tables.meta,
        tsuid,
        META_FAMILY,
        TS_META_QUALIFIER,
        token.as_deref(),
        meta.storage_json().as_bytes(),
    )?;
    if !ok {
        return Err(MetaError::CasFailed(
            "Failed to save the TSMeta to storage".into(),
        ));
    }
    load(ctx, tsuid)
}

/// Removes `ts_meta` (the counter stays, as in OpenTSDB).
pub fn delete(ctx: &MetaCtx, tsuid: &[u8]) -> MetaResult<()> {
    ctx.store.mutate(
        &ctx.tables.meta,
        vec![RowMutations {
            row: tsuid.to_vec(),
            mutations: vec![Mutation::Delete {
                family: META_FAMILY.to_vec(),
                qualifier: TS_META_QUALIFIER.to_vec(),
            }],
        }],
    )?;
    Ok(())
}

/// Realtime creation: a fresh TSMeta (created = `now`) unless one exists. True if written.
pub fn create_if_absent(ctx: &MetaCtx, tsuid: &[u8], now: u64) -> MetaResult<bool> {
    let cells = ctx.store.get(&ctx.tables.meta, tsuid, &[META_FAMILY])?;
    if cells.iter().any(|c| c.qualifier == TS_META_QUALIFIER) {
        return Ok(false);
    }
    let meta = TsMeta::new(tsuid, now);
    Ok(ctx.store.check_and_put(
        &ctx.tables.meta,
        tsuid,
        META_FAMILY,
        TS_META_QUALIFIER,
        None,
        meta.storage_json().as_bytes(),
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_and_api_json() {
        let m = TsMeta::new(&[0, 0, 1, 0, 0, 1, 0, 0, 1], 1357002000);
        assert_eq!(
            m.storage_json(),
            r#"{"tsuid":"000001000001000001","displayName":"","description":"","notes":"","created":1357002000,"custom":null,"units":"","dataType":"","retention":0,"max":"NaN","min":"NaN"}"#
        );
        let back = TsMeta::from_storage(m.storage_json().as_bytes()).unwrap();
        assert_eq!(back.storage_json(), m.storage_json());
        let mut f = m.clone();
        f.max = 42.0;
        f.min = 0.5;
        assert!(f.storage_json().ends_with(r#""max":42.0,"min":0.5}"#));
        assert!(m.api_json().starts_with(
            r#"{"tsuid":"000001000001000001","metric":null,"tags":[],"description":"","#
        ));
        assert!(m.api_json().ends_with(
            r#""custom":null,"displayName":"","dataType":"","lastReceived":0,"totalDatapoints":0}"#
        ));
    }

    #[test]
    fn merge_keeps_unset_fields_and_put_resets_them() {
        let stored = TsMeta {
            units: "ms".into(),
            description: "d".into(),
            created: 5,
            ..TsMeta::new(&[1], 5)
        };
        let req = TsMetaUpdate {
            notes: Some("n".into()),
            max: Some(serde_json::json!(3)),
            ..Default::default()
        };
        let m = req.apply(stored.clone(), false);
        assert_eq!(
            (m.units.as_str(), m.notes.as_str(), m.max, m.created),
            ("ms", "n", 3.0, 5)
        );
        let p = req.apply(stored, true);
        assert_eq!(
            (p.units.as_str(), p.description.as_str(), p.created),
            ("", "", 5)
        );
    }
}
