//! `tsgate uid assign|grep|rename`, like OpenTSDB's `tsdb uid`.

use super::Common;
use crate::schema::hex_upper;
use crate::schema::uid_table::UidKind;
use clap::Subcommand;

#[derive(Subcommand, Debug)]
pub enum UidAction {
    /// Assign UIDs to new names: `uid assign metrics sys.cpu.user sys.cpu.idle`.
    Assign { kind: String, names: Vec<String> },
    /// Find names matching a regex: `uid grep [metrics|tagk|tagv] REGEX`.
    Grep { args: Vec<String> },
    /// Rename: `uid rename metrics old.name new.name`.
    Rename {
        kind: String,
        old: String,
        new: String,
    },
    /// Remove UIDs no stored series uses any more (forward, reverse and UIDMeta cells).
    Gc {
        /// Only list what would be removed.
        #[arg(long)]
        dry_run: bool,
        /// Spare UIDs assigned less than this long ago (their points may still be on their
        /// way on a running node): e.g. `1h`, `0s`.
        #[arg(long, default_value = "1h")]
        min_age: String,
    },
}

fn kind(s: &str) -> anyhow::Result<UidKind> {
    UidKind::parse(s)
        .ok_or_else(|| anyhow::anyhow!("unknown kind {s:?}: use metrics, tagk or tagv"))
}

pub fn run(common: &Common, action: UidAction) -> anyhow::Result<i32> {
    let cfg = common.load()?;
    // Assigning ahead of the first write may make the store; looking up and renaming may not.
    let store = match action {
        UidAction::Assign { .. } => crate::app::open_store(&cfg)?,
        _ => crate::app::open_existing_store(&cfg)?,
    };
    let uids = crate::app::uid_core(&cfg, store.clone())?;
    let mut status = 0;
    match action {
        UidAction::Assign { kind: k, names } => {
            let k = kind(&k)?;
            for n in names {
                let what = match k {
                    UidKind::Metric => "metric",
                    UidKind::Tagk => "tagk",
                    UidKind::Tagv => "tagv",
                };
                let res =
                    tsgate_opentsdb::names::validate(&n, what, &cfg.limits.allow_special_chars)
                        .map_err(anyhow::Error::msg)
                        .and_then(|_| uids.assign(k, &n).map_err(anyhow::Error::from));
                match res {
                    Ok(u) => println!("{} {}: {}", k.as_str(), n, hex_upper(&u)),
                    Err(e) => {
                        eprintln!("{} {}: {e}", k.as_str(), n);
                        status = 1;
                    }
                }
            }
        }
        UidAction::Grep { args } => {
            let (kinds, re) = match args.as_slice() {
                [re] => (UidKind::ALL.to_vec(), re.clone()),
                [k, re] => (vec![kind(k)?], re.clone()),
                _ => anyhow::bail!("usage: tsgate uid grep [metrics|tagk|tagv] REGEX"),
            };
            let re = regex::Regex::new(&re)?;
            let mut found = false;
            for k in kinds {
                for (name, uid) in uids.list(k)? {
                    if re.is_match(&name) {
                        println!("{} {}: {}", k.as_str(), name, hex_upper(&uid));
                        found = true;
                    }
                }
            }
            if !found {
                status = 1;
            }
        }
        UidAction::Gc { dry_run, min_age } => {
            let min_age = crate::config::parse_duration_s(&min_age)
                .map_err(|e| anyhow::anyhow!("--min-age: {e}"))?;
            let gone = crate::lifecycle::uidgc::collect(
                &store,
                &cfg.storage.tables.uid,
                &cfg.storage.tables.data,
                cfg.layout(),
                min_age * 1000,
                tsgate_common::clock::now_ms(),
                dry_run,
            )?;
            let verb = if dry_run { "unused" } else { "removed" };
            for c in &gone {
                println!(
                    "{verb} {} {}: {}",
                    c.kind.as_str(),
                    c.name,
                    hex_upper(&c.uid)
                );
            }
            println!("{} UIDs {verb}", gone.len());
        }
        UidAction::Rename { kind: k, old, new } => {
            let k = kind(&k)?;
            tsgate_opentsdb::names::validate(&new, k.as_str(), &cfg.limits.allow_special_chars)
                .map_err(anyhow::Error::msg)?;
            let u = uids.rename(k, &old, &new)?;
            println!("{} {} -> {}: {}", k.as_str(), old, new, hex_upper(&u));
        }
    }
    store.flush()?;
    Ok(status)
}
