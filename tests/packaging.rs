//! The Debian package's sample config, `src/packaging/tsgate.toml`: every key of the configuration
//! is in it, commented out with its default, and uncommenting them all changes nothing but the
//! one active key (`data_dir`, the package's `/var/lib/tsgate`).

use std::path::PathBuf;
use tsgate::config::Config;

fn sample() -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/packaging/tsgate.toml");
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Every `# key = value` and `# [section]` line made active; `##` lines stay comments.
fn uncommented(text: &str) -> String {
    text.lines()
        .map(|l| match l.strip_prefix("# ") {
            Some(rest)
                if rest.starts_with('[')
                    || rest.split_once(" = ").is_some_and(|(k, _)| {
                        !k.is_empty()
                            && k.chars()
                                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
                    }) =>
            {
                rest
            }
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every leaf key of a TOML value as `section.key`, with its value.
fn leaves(prefix: &str, v: &toml::Value, out: &mut Vec<(String, toml::Value)>) {
    match v {
        toml::Value::Table(t) => {
            for (k, v) in t {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                leaves(&key, v, out);
            }
        }
        v => out.push((prefix.to_string(), v.clone())),
    }
}

fn defaults() -> Vec<(String, toml::Value)> {
    let mut out = Vec::new();
    leaves(
        "",
        &toml::Value::try_from(Config::default()).unwrap(),
        &mut out,
    );
    out
}

#[test]
fn the_sample_config_lists_every_key_with_its_default() {
    let text = sample();
    let active: Config = toml::from_str(&text).expect("the sample parses as it ships");
    assert_eq!(active.data_dir, PathBuf::from("/var/lib/tsgate"));
    let all: Config = toml::from_str(&uncommented(&text))
        .unwrap_or_else(|e| panic!("the sample with every key uncommented: {e}"));
    let mut got = Vec::new();
    leaves(
        "",
        &toml::from_str::<toml::Value>(&uncommented(&text)).unwrap(),
        &mut got,
    );
    let mut problems = Vec::new();
    for (k, v) in defaults() {
        match got.iter().find(|(g, _)| *g == k) {
            None => problems.push(format!("missing: {k} = {v}")),
            Some((_, g)) if *g != v && k != "data_dir" => {
                problems.push(format!("{k} = {g}, but its default is {v}"))
            }
            Some(_) => {}
        }
    }
    assert!(
        problems.is_empty(),
        "src/packaging/tsgate.toml:\n{}",
        problems.join("\n")
    );
    let want = Config {
        data_dir: "/var/lib/tsgate".into(),
        ..Config::default()
    };
    assert_eq!(all, want, "an uncommented key differs from its default");
}
