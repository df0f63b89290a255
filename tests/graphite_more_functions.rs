//! graphite-web 1.1.10's render functions that came after the first set, reached the way a
//! user reaches them: carbon plaintext in, `/render` (json, pie images), `template[…]`
//! request parameters and `/functions` out, against a real server.

mod common;

use common::*;
use serde_json::Value;
use std::time::{Duration, Instant};

const T0: i64 = 1_700_000_000 - 1_700_000_000 % 600;

struct Graphite {
    server: Server,
    _dir: tempfile::TempDir,
}

/// A server holding `m.a` = 1..6 and `m.b` = 10, 20, … 60 every 60 s from T0.
fn start() -> Graphite {
    let mut lines = String::new();
    for i in 0..6i64 {
        lines.push_str(&format!("m.a {} {}\n", i + 1, T0 + i * 60));
        lines.push_str(&format!("m.b {} {}\n", (i + 1) * 10, T0 + i * 60));
    }
    let (server, dir) = start_carbon_with(&lines);
    let g = Graphite { server, _dir: dir };
    let deadline = Instant::now() + Duration::from_secs(15);
    while json(&g, "m.*", "")
        .iter()
        .map(|s| values(s).len())
        .sum::<usize>()
        < 12
    {
        assert!(Instant::now() < deadline, "points never arrived");
        std::thread::sleep(Duration::from_millis(100));
    }
    g
}

fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

fn get(g: &Graphite, target: &str, extra: &str) -> (u16, Vec<u8>) {
    let path = format!(
        "/render?target={}&from={}&until={}{extra}",
        enc(target),
        T0 - 60,
        T0 + 300
    );
    http_bytes(&g.server.addr, "GET", &path, b"", &[])
}

fn json(g: &Graphite, target: &str, extra: &str) -> Vec<Value> {
    let (code, body) = get(g, target, &format!("&format=json{extra}"));
    let text = String::from_utf8_lossy(&body).into_owned();
    assert_eq!(code, 200, "{target}: {text}");
    serde_json::from_str::<Value>(&text)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn values(s: &Value) -> Vec<f64> {
    s["datapoints"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p[0].as_f64())
        .collect()
}

#[test]
fn new_functions_answer_with_graphite_web_names_values_and_errors() {
    let g = start();
    // Pairwise lists: m.a + m.b by position.
    let r = json(&g, "sumSeriesLists(m.a,m.b)", "");
    assert_eq!(r[0]["target"], "sumSeries(m.a,m.b)");
    assert_eq!(values(&r[0]), vec![11.0, 22.0, 33.0, 44.0, 55.0, 66.0]);
    assert_eq!(r[0]["tags"]["aggregatedBy"], "sum");
    // Wildcards: m.a and m.b share "m" once node 1 is dropped.
    let r = json(&g, "averageSeriesWithWildcards(m.*,1)", "");
    assert_eq!(r[0]["target"], "m");
    assert_eq!(values(&r[0])[0], 5.5);
    // reduce over map: m.b / m.a = 10 everywhere.
    let r = json(
        &g,
        "reduceSeries(mapSeries(m.*,0),'divideSeries',1,'b','a')",
        "",
    );
    assert_eq!(r[0]["target"], "m.reduce.divideSeries");
    assert_eq!(values(&r[0]), vec![10.0; 6]);
    // filterSeries keeps the series whose max is over 6.
    let r = json(&g, "filterSeries(m.*,'max','>',6)", "");
    assert_eq!(r.len(), 1);
    assert_eq!(r[0]["target"], "m.b");
    // aggregateLine: the average of m.a over the window is 3.5.
    let r = json(&g, "aggregateLine(m.a)", "");
    assert_eq!(r[0]["target"], "aggregateLine(m.a, 3.5)");
    // Argument errors in graphite-web's words, as a 400.
    let (code, body) = get(&g, "filterSeries(m.*,'max','~',6)", "&format=json");
    assert_eq!(code, 400);
    assert!(
        String::from_utf8_lossy(&body).contains(
            "Invalid option specified for function \"filterSeries\" parameter \"operator\": '~'"
        ),
        "{}",
        String::from_utf8_lossy(&body)
    );
}

#[test]
fn templates_take_literals_and_request_parameters() {
    let g = start();
    let r = json(&g, "template(m.$1)", "&template[1]=b");
    assert_eq!(r[0]["target"], "m.b");
    let r = json(&g, "template(scale(m.$s,$f),s='a',f=2)", "");
    assert_eq!(values(&r[0]), vec![2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
    // The request's value overrides the default, and reads as a number.
    let r = json(&g, "template(scale(m.$s,$f),s='a',f=2)", "&template[f]=0.5");
    assert_eq!(values(&r[0])[1], 1.0);
    let (code, _) = get(&g, "template(m.$1,m.a)", "&format=json");
    assert_eq!(code, 400);
}

#[test]
fn pie_images_and_function_listings() {
    let g = start();
    // Slices from series (pieMode) and from name:value targets, drawn as an SVG.
    let path = format!(
        "/render?target={}&target={}&graphType=pie&pieMode=maximum&format=svg&from={}&until={}",
        enc("m.*"),
        enc("fixed:40"),
        T0 - 60,
        T0 + 300
    );
    let (code, body) = http_bytes(&g.server.addr, "GET", &path, b"", &[]);
    let svg = String::from_utf8_lossy(&body).into_owned();
    assert_eq!(code, 200, "{svg}");
    // Maxima 6 and 60 and the fixed 40: 6/106, 60/106, 40/106 of the pie.
    assert!(svg.contains(">%56.60</text>"), "{svg}");
    assert!(svg.contains(">%37.74</text>"), "{svg}");
    assert!(svg.contains(">%5.66</text>"), "{svg}");
    for name in ["m.a", "m.b", "fixed"] {
        assert!(
            svg.contains(&format!(">{name}</text>")),
            "legend lacks {name}"
        );
    }
    // A PNG by default, whatever the format.
    let (code, body) = get(&g, "m.*", "&graphType=pie&format=json");
    assert_eq!(code, 200);
    assert_eq!(&body[1..4], b"PNG");
    let (code, _) = get(&g, "m.*", "&graphType=pie&pieMode=median");
    assert_eq!(code, 400);

    // /functions lists the new functions with graphite-web's parameter shape; type=pie the
    // pie functions.
    let (code, body) = g.server.http("GET", "/functions", "");
    assert_eq!(code, 200);
    let f: Value = serde_json::from_str(&body).unwrap();
    let fs = &f["filterSeries"];
    assert_eq!(fs["group"], "Filter Series");
    assert_eq!(
        fs["params"][2]["options"],
        serde_json::json!(["!=", "<", "<=", "=", ">", ">="])
    );
    assert_eq!(f["holtWintersForecast"]["params"][1]["default"], "7d");
    assert_eq!(
        f["holtWintersForecast"]["params"][1]["suggestions"],
        serde_json::json!(["7d", "30d"])
    );
    assert_eq!(f["map"]["function"], "map(seriesList, *mapNodes)");
    for name in tsgate::query::graphite::functions::more_spec::GRAPHITE_WEB_NAMES {
        assert!(f.get(*name).is_some(), "/functions lacks {name}");
    }
    let (_, body) = g.server.http("GET", "/functions?type=pie", "");
    let p: Value = serde_json::from_str(&body).unwrap();
    let mut names: Vec<&String> = p.as_object().unwrap().keys().collect();
    names.sort();
    assert_eq!(names, vec!["average", "maximum", "minimum"]);
}

#[test]
fn events_are_the_global_annotations_for_both_readers() {
    let g = start();
    let note = |start: i64, what: &str, tags: &str| {
        let body = serde_json::json!({
            "startTime": start, "description": what, "notes": format!("{what} notes"),
            "custom": {"tags": tags}
        });
        let (code, text) = g.server.http("POST", "/api/annotation", &body.to_string());
        assert_eq!(code, 200, "{text}");
    };
    // A second global annotation at the same start time would be the same one: this one
    // starts half a second later (in ms), in the same second.
    note(T0 + 60, "deploy web", "deploy web");
    note((T0 + 60) * 1000 + 500, "deploy db", "deploy,db");
    note(T0 + 120, "restart web", "web");
    // /events/get_data: when, what, data and the tags split at spaces and commas.
    let (code, text) = g.server.http(
        "GET",
        &format!("/events/get_data?from={}&until={}&tags=web", T0, T0 + 300),
        "",
    );
    assert_eq!(code, 200, "{text}");
    let got: Vec<Value> = serde_json::from_str(&text).unwrap();
    let summary: Vec<(i64, &str, &str, Vec<&str>)> = got
        .iter()
        .map(|e| {
            let tags = e["tags"].as_array().unwrap();
            (
                e["when"].as_i64().unwrap(),
                e["what"].as_str().unwrap(),
                e["data"].as_str().unwrap(),
                tags.iter().map(|t| t.as_str().unwrap()).collect(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (
                T0 + 60,
                "deploy web",
                "deploy web notes",
                vec!["deploy", "web"]
            ),
            (T0 + 120, "restart web", "restart web notes", vec!["web"]),
        ]
    );
    let (_, text) = g.server.http(
        "GET",
        &format!("/events/get_data?from={}&until={}", T0 + 100, T0 + 300),
        "",
    );
    let got: Vec<Value> = serde_json::from_str(&text).unwrap();
    assert_eq!(got.len(), 1, "{text}");
    assert_eq!(got[0]["what"], "restart web");
    let (_, text) = g.server.http(
        "GET",
        &format!(
            "/events/get_data?from={T0}&until={}&tags=db deploy",
            T0 + 300
        )
        .replace(' ', "%20"),
        "",
    );
    let got: Vec<Value> = serde_json::from_str(&text).unwrap();
    assert_eq!(got.len(), 1, "{text}");
    assert_eq!(got[0]["tags"], serde_json::json!(["deploy", "db"]));
    // events(): the same events counted per second (both deploys start in one second).
    let s = json(&g, "events('deploy')", "");
    assert_eq!(s[0]["target"], "events(\"deploy\")");
    let counted: Vec<(i64, f64)> = s[0]["datapoints"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| Some((p[1].as_i64()?, p[0].as_f64()?)))
        .collect();
    assert_eq!(counted, vec![(T0 + 60, 2.0)]);
    let s = json(&g, "events('*')", "");
    assert_eq!(values(&s[0]), vec![2.0, 1.0]);
}
