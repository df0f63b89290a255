//! `/api/query` answers in OpenTSDB's JSON: field order, number formatting (integers plain,
//! doubles like Java's `Double.toString`, NaN as "NaN" or null), dps as an object or arrays.

use super::aggregate::Num;
use super::spec::{Query, SubQuery};
use super::{ResultSeries, Summary};
use serde_json::{json, Value as Json};
use std::fmt::Write;
use tsgate_common::numfmt::push_java_double;

/// A point's value appended to `out` (a query writes thousands: no string per point).
fn push_num(out: &mut String, v: Num, nan_as_null: bool) {
    match v {
        Num::Int(i) => out.push_str(itoa::Buffer::new().format(i)),
        Num::Float(f) if f.is_nan() => out.push_str(if nan_as_null { "null" } else { "\"NaN\"" }),
        Num::Float(f) if f.is_infinite() => out.push_str(if f > 0.0 {
            "\"Infinity\""
        } else {
            "\"-Infinity\""
        }),
        Num::Float(f) => push_java_double(out, f),
    }
}

/// The sub-query as OpenTSDB echoes it with `showQuery`.
pub fn query_echo(sq: &SubQuery) -> Json {
    let mut tags = serde_json::Map::new();
    for f in sq.filters.iter().filter(|f| f.group_by) {
        tags.insert(
            f.tagk.clone(),
            json!(format!("{}({})", f.kind.name(), f.expr)),
        );
    }
    json!({
        "aggregator": sq.aggregator.name(),
        "metric": sq.metric,
        "tsuids": if sq.tsuids.is_empty() { Json::Null } else { json!(sq.tsuids) },
        "downsample": sq.downsample.as_ref().map(|d| d.spec.clone()),
        "rate": sq.rate,
        "filters": sq.filters.iter().map(|f| f.to_json()).collect::<Vec<_>>(),
        "index": sq.index,
        "tags": tags,
        "rateOptions": sq.rate_options.as_ref().map(|o| json!({
            "counter": o.counter, "counterMax": o.counter_max, "resetValue": o.reset_value, "dropResets": o.drop_resets
        })),
        "explicitTags": sq.explicit_tags,
    })
}

/// What a query adds besides its series: the global annotations in range.
#[derive(Default)]
pub struct Extras {
    pub global: Vec<Json>,
}

pub fn render(
    q: &Query,
    series: &[ResultSeries],
    summary: &Summary,
    extras: &Extras,
    elapsed_ms: f64,
) -> String {
    let mut s = String::from("[");
    for (i, r) in series.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(
            s,
            "{{\"metric\":{},\"tags\":{},\"aggregateTags\":{}",
            json!(r.metric),
            json!(r.tags),
            json!(r.aggregate_tags)
        );
        if q.flags.show_query {
            let _ = write!(s, ",\"query\":{}", query_echo(&q.queries[r.index]));
        }
        if q.flags.show_tsuids {
            let _ = write!(s, ",\"tsuids\":{}", json!(r.tsuids));
        }
        if !r.annotations.is_empty() && !q.flags.no_annotations {
            let _ = write!(s, ",\"annotations\":{}", json!(r.annotations));
        }
        if q.flags.global_annotations && !extras.global.is_empty() {
            let _ = write!(
                s,
                ",\"globalAnnotations\":{}",
                Json::Array(extras.global.clone())
            );
        }
        s.push_str(",\"dps\":");
        s.push(if q.flags.arrays { '[' } else { '{' });
        for (j, (t, v)) in r.dps.iter().enumerate() {
            if j > 0 {
                s.push(',');
            }
            let ts = if q.flags.ms_resolution { *t } else { t / 1000 };
            let mut tb = itoa::Buffer::new();
            let ts = tb.format(ts);
            if q.flags.arrays {
                s.push('[');
                s.push_str(ts);
                s.push(',');
                push_num(&mut s, *v, r.nan_as_null);
                s.push(']');
            } else {
                s.push('"');
                s.push_str(ts);
                s.push_str("\":");
                push_num(&mut s, *v, r.nan_as_null);
            }
        }
        s.push(if q.flags.arrays { ']' } else { '}' });
        if q.flags.show_stats {
            let _ = write!(s, ",\"stats\":{}", json!({"emittedDPs": r.dps.len()}));
        }
        s.push('}');
    }
    if q.flags.show_summary {
        if !series.is_empty() {
            s.push(',');
        }
        let _ = write!(
            s,
            "{{\"statsSummary\":{}}}",
            json!({
                "datapoints": summary.emitted,
                "rawDatapoints": summary.raw_datapoints,
                "rowsScanned": summary.rows,
                "timeTotal": elapsed_ms,
                "queryIdx_00": {"emittedDPs": summary.emitted},
            })
        );
    }
    s.push(']');
    s
}
