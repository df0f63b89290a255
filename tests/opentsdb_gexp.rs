//! OpenTSDB 2.4's `/api/query/gexp` over HTTP: the docs' example, the series functions on
//! the data of OpenTSDB's `BaseTimeSyncedIteratorTest.oneExtraSameE` with the values its
//! `TestSumSeries`/`TestDivideSeries` expect, and the error envelopes 2.4 answers with.

mod common;
use common::*;
use serde_json::{json, Value};

const T: u64 = 1431561600;

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn gexp(s: &Server, exp: &str) -> (u16, Value) {
    let (code, body) = s.http(
        "GET",
        &format!(
            "/api/query/gexp?start={}&end={}&exp={}",
            T - 600,
            T + 600,
            enc(exp)
        ),
        "",
    );
    (
        code,
        serde_json::from_str(&body).unwrap_or(Value::String(body)),
    )
}

fn dps(v: &Value) -> Vec<(u64, f64)> {
    v["dps"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(t, x)| (t.parse().unwrap(), x.as_f64().unwrap()))
        .collect()
}

/// A and B over tags D and E; B alone has D=G (OpenTSDB's `oneExtraSameE`).
fn one_extra_same_e(s: &Server) {
    let mut pts = Vec::new();
    for (m, d, vals) in [
        ("A", "D", [1, 2, 3]),
        ("A", "F", [4, 5, 6]),
        ("B", "D", [11, 12, 13]),
        ("B", "F", [14, 15, 16]),
        ("B", "G", [17, 18, 19]),
    ] {
        for (i, v) in vals.iter().enumerate() {
            pts.push(
                json!({"metric": m, "timestamp": T + 60 * i as u64, "value": v,
                            "tags": {"D": d, "E": "E"}}),
            );
        }
    }
    let (code, resp) = s.http("POST", "/api/put?sync", &Value::Array(pts).to_string());
    assert_eq!(code, 204, "{resp}");
}

#[test]
fn series_functions_join_by_tags_as_2_4_does() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    one_extra_same_e(&s);

    // TestDivideSeries.divideMultipleSeriesEach: B / A per tag set; D=G has no A, and
    // lenient JEXL divides by the missing side's 0 to 0.
    let (code, v) = gexp(&s, "divideSeries(sum:B{D=*},sum:A{D=*})");
    assert_eq!(code, 200, "{v}");
    let out = v.as_array().unwrap();
    assert_eq!(out.len(), 3);
    let t = |i: u64| T + 60 * i;
    assert_eq!(
        dps(&out[0]),
        vec![(t(0), 11.0), (t(1), 6.0), (t(2), 13.0 / 3.0)]
    );
    assert_eq!(
        dps(&out[1]),
        vec![(t(0), 3.5), (t(1), 3.0), (t(2), 16.0 / 6.0)]
    );
    assert_eq!(dps(&out[2]), vec![(t(0), 0.0), (t(1), 0.0), (t(2), 0.0)]);
    // The joined set's metric is the lowest metric UID's (A was created first); its tags
    // are the first argument's.
    assert_eq!(out[0]["metric"], "A");
    assert_eq!(out[0]["tags"], json!({"D": "D", "E": "E"}));
    assert_eq!(out[2]["metric"], "B");
    assert_eq!(out[2]["tags"], json!({"D": "G", "E": "E"}));
    // Doubles even where the quotient is whole.
    assert!(v.to_string().contains(&format!("\"{}\":11.0", t(0))), "{v}");

    // TestSumSeries.sumMultipleSeriesEach: 12, 18, 17 rising by 2, 2, 1. With A first,
    // the set A lacks has no tags (they come from the first argument).
    let (code, v) = gexp(&s, "sumSeries(sum:A{D=*}, sum:B{D=*})");
    assert_eq!(code, 200, "{v}");
    let out = v.as_array().unwrap();
    assert_eq!(dps(&out[0]), vec![(t(0), 12.0), (t(1), 14.0), (t(2), 16.0)]);
    assert_eq!(dps(&out[1]), vec![(t(0), 18.0), (t(1), 20.0), (t(2), 22.0)]);
    assert_eq!(dps(&out[2]), vec![(t(0), 17.0), (t(1), 18.0), (t(2), 19.0)]);
    assert_eq!(out[2]["tags"], json!({}));

    let (_, v) = gexp(&s, "diffSeries(sum:B{D=*},sum:A{D=*})");
    assert_eq!(dps(&v[0]), vec![(t(0), 10.0), (t(1), 10.0), (t(2), 10.0)]);
    let (_, v) = gexp(&s, "multiply(sum:B{D=D},sum:A{D=D},max:A{D=D})");
    assert_eq!(dps(&v[0]), vec![(t(0), 11.0), (t(1), 48.0), (t(2), 117.0)]);
    // Equal sub-queries are fetched once and the expression's indexes then run past the
    // list, as in 2.4 (its `ArrayList` words the error).
    let (code, v) = gexp(&s, "multiply(sum:B{D=D},sum:A{D=D},sum:A{D=D})");
    assert_eq!(
        (code, &v["error"]["message"]),
        (400, &json!("Index: 2, Size: 2"))
    );

    // Nesting, aliases with @tag templates (and 2.4's absolute values under alias).
    let (code, v) = gexp(&s, "alias(scale(sum:A{D=*},-2),a.@D)");
    assert_eq!(code, 200, "{v}");
    assert_eq!(v[0]["metric"], "a.D");
    assert_eq!(v[1]["metric"], "a.F");
    assert_eq!(v[0]["tags"], json!({}));
    assert_eq!(
        v[1]["dps"],
        json!({(t(0)).to_string(): 8, (t(1)).to_string(): 10, (t(2)).to_string(): 12})
    );

    // highestMax keeps the top n by their maxima, integers as integers.
    let (_, v) = gexp(&s, "highestMax(sum:B{D=*},2)");
    let tags: Vec<&Value> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["tags"]["D"])
        .collect();
    assert_eq!(tags, [&json!("G"), &json!("F")]);
    assert_eq!(v[0]["dps"][t(2).to_string()], json!(19));
    let (_, v) = gexp(&s, "highestCurrent(sum:A{D=*},1)");
    assert_eq!(v.as_array().unwrap().len(), 1);
    assert_eq!(v[0]["tags"]["D"], "F");

    // movingAverage over 2 points: 0 until the window fills.
    let (_, v) = gexp(&s, "movingAverage(sum:B{D=D},2)");
    assert_eq!(dps(&v[0]), vec![(t(0), 0.0), (t(1), 11.5), (t(2), 12.5)]);
    let (_, v) = gexp(&s, "movingAverage(sum:B{D=D},'2min')");
    assert_eq!(dps(&v[0]), vec![(t(0), 0.0), (t(1), 0.0), (t(2), 12.5)]);

    // Several exp= answer in order; m= alone adds nothing to the answer.
    let (code, body) = s.http(
        "GET",
        &format!(
            "/api/query/gexp?start={}&exp={}&exp={}",
            T - 600,
            enc("absolute(sum:A)"),
            enc("scale(sum:B,0.5)")
        ),
        "",
    );
    assert_eq!(code, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v[0]["dps"][t(0).to_string()], json!(5));
    assert_eq!(v[0]["aggregateTags"], json!(["D"]));
    assert_eq!(v[1]["dps"][t(0).to_string()], json!(21.0));
    let (code, body) = s.http(
        "GET",
        &format!("/api/query/gexp?start={}&m=sum:A", T - 600),
        "",
    );
    assert_eq!((code, body.as_str()), (200, "[]"));
}

#[test]
fn the_docs_example_and_the_error_envelopes() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let pts: Vec<Value> = ["web01", "web02"]
        .iter()
        .enumerate()
        .map(|(i, h)| json!({"metric": "if.bytes_in", "timestamp": T, "value": 3 + i, "tags": {"host": h}}))
        .collect();
    assert_eq!(
        s.http("POST", "/api/put?sync", &Value::Array(pts).to_string())
            .0,
        204
    );
    // http://localhost:4242/api/query/gexp?start=1h-ago&exp=scale(sum:if.bytes_in{host=*},1024)
    let (code, v) = gexp(&s, "scale(sum:if.bytes_in{host=*},1024)");
    assert_eq!(code, 200, "{v}");
    assert_eq!(
        v,
        json!([
            {"metric": "if.bytes_in", "tags": {"host": "web01"}, "aggregateTags": [], "dps": {T.to_string(): 3072}},
            {"metric": "if.bytes_in", "tags": {"host": "web02"}, "aggregateTags": [], "dps": {T.to_string(): 4096}}
        ])
    );

    let err = |exp: &str| {
        let (code, v) = gexp(&s, exp);
        (
            code,
            v["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            v["error"]["details"].clone(),
        )
    };
    // The parser's errors are 500s; a function's are 400s with the message as details.
    assert_eq!(
        err("scale(sum:if.bytes_in"),
        (
            500,
            "Failed to parse scale(sum:if.bytes_in".into(),
            Value::Null
        )
    );
    assert_eq!(
        err("nope(sum:if.bytes_in)"),
        (
            500,
            "Function nope has not been implemented".into(),
            Value::Null
        )
    );
    let m = "Must have 2 to 26 series, got 1 instead";
    assert_eq!(err("sumSeries(sum:if.bytes_in)"), (400, m.into(), json!(m)));
    let m = "Unparseable scale factor value: 0.0";
    assert_eq!(err("scale(sum:if.bytes_in,x)"), (400, m.into(), json!(m)));
    // timeShift's unit keeps its closing quote in 2.4, so no unit matches.
    let m = "unknown time unit=min'";
    assert_eq!(
        err("timeShift(sum:if.bytes_in,'10min')"),
        (400, m.into(), json!(m))
    );
    let (code, v) = gexp(&s, "scale(sum:no.such,2)");
    assert_eq!(code, 400);
    assert!(
        v["error"]["message"].as_str().unwrap().contains("no.such"),
        "{v}"
    );
    let (code, body) = s.http(
        "GET",
        &format!("/api/query/gexp?exp={}", enc("scale(sum:if.bytes_in,2)")),
        "",
    );
    assert_eq!(code, 400);
    assert!(
        body.contains("Missing parameter <code>start</code>"),
        "{body}"
    );
    assert_eq!(s.http("PUT", "/api/query/gexp?start=1h-ago", "").0, 405);
}

/// The answer is `/api/query`'s: global annotations when asked for, and refused (413) past
/// `query.max_answer_bytes`.
#[test]
fn answers_carry_global_annotations_and_keep_to_the_answer_limit() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("tsgate.toml");
    std::fs::write(&cfg, "[query]\nmax_answer_bytes = 1000\n").unwrap();
    let s = Server::start_with(&dir.path().join("data"), Some(&cfg));
    one_extra_same_e(&s);
    let note = json!({"startTime": T + 60, "description": "outage"});
    let (code, resp) = s.http("POST", "/api/annotation", &note.to_string());
    assert_eq!(code, 200, "{resp}");
    let url = |exp: &str, extra: &str| {
        format!(
            "/api/query/gexp?start={}&end={}&exp={}{extra}",
            T - 600,
            T + 600,
            enc(exp)
        )
    };
    let (code, body) = s.http(
        "GET",
        &url("scale(sum:A{D=D},1)", "&global_annotations"),
        "",
    );
    assert_eq!(code, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v[0]["globalAnnotations"][0]["description"], "outage");
    let (_, body) = s.http("GET", &url("scale(sum:A{D=D},1)", ""), "");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert!(v[0].get("globalAnnotations").is_none(), "{v}");
    // Twelve series of three points (four `exp`s of three each) pass 1000 bytes.
    let exps: String = ["sum", "max", "min", "avg"]
        .iter()
        .map(|agg| format!("&exp={}", enc(&format!("scale({agg}:B{{D=*}},2)"))))
        .collect();
    let (code, body) = s.http(
        "GET",
        &format!("/api/query/gexp?start={}&end={}{exps}", T - 600, T + 600),
        "",
    );
    assert_eq!(code, 413, "{body}");
    assert!(body.contains("query.max_answer_bytes"), "{body}");
}
