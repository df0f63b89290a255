//! Graphite name rules: arbitrary rule sets compile or are refused, and every path they accept
//! maps to a series that inverts to the very same path (the documented guarantee).
#![no_main]
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use std::collections::BTreeMap;
use tsgate::config::GraphiteRule;
use tsgate::graphite::names::{Mapped, NameRules};

#[derive(Arbitrary, Debug)]
struct Input {
    rules: Vec<RuleIn>,
    paths: Vec<String>,
}

#[derive(Arbitrary, Debug)]
struct RuleIn {
    match_: String,
    metric: String,
    tags: Vec<(String, String)>,
    where_: Vec<(String, String)>,
    template: String,
    filter: String,
    priority: i8,
    drop: bool,
}

/// The README's rule set, always present, so path fuzzing reaches real rules quickly.
fn readme_rules() -> Vec<GraphiteRule> {
    let t = |p: &[(&str, &str)]| p.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>();
    vec![
        GraphiteRule {
            name: "collectd".into(),
            match_: "collectd.{host}.{plugin}-{instance}.{type}-{type_instance}".into(),
            metric: "collectd.{plugin}.{type}".into(),
            tags: t(&[("host", "{host}"), ("instance", "{instance}"), ("type_instance", "{type_instance}")]),
            ..Default::default()
        },
        GraphiteRule {
            name: "statsd-counters".into(),
            match_: "stats.counters.{counter*}".into(),
            metric: "stats.counters".into(),
            tags: t(&[("counter", "{counter*}"), ("source", "statsd")]),
            ..Default::default()
        },
        GraphiteRule { name: "fleet".into(), template: "dc.host.measurement*".into(), filter: "eu-*".into(), ..Default::default() },
        GraphiteRule { match_: "junk.{x*}".into(), drop: true, ..Default::default() },
    ]
}

fuzz_target!(|input: Input| {
    let mut rules = readme_rules();
    for (i, r) in input.rules.into_iter().take(4).enumerate() {
        rules.push(GraphiteRule {
            name: format!("fuzz{i}"),
            match_: r.match_,
            metric: r.metric,
            tags: r.tags.into_iter().take(8).collect(),
            where_: r.where_.into_iter().take(4).collect(),
            priority: r.priority as i32,
            drop: r.drop,
            template: r.template,
            filter: r.filter,
        });
    }
    let Ok(nr) = NameRules::compile(&rules, 8) else { return };
    for path in input.paths.iter().take(8) {
        match nr.map(path) {
            Ok(Mapped::Series(m, t)) => assert_eq!(&nr.to_path(&m, &t), path, "series {m} {t:?} does not invert"),
            Ok(Mapped::Whole(m)) => {
                let (sm, st) = nr.to_series(path).expect("a whole-path mapping is a series");
                assert_eq!(sm, m);
                assert_eq!(&nr.to_path(&sm, &st), path, "whole-path {m} does not invert");
            }
            Ok(Mapped::Drop) | Err(_) => {}
        }
    }
});
