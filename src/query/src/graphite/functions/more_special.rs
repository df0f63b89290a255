//! `events()`: graphite-web's events (tsgate's global OpenTSDB annotations, the ones
//! `/events/get_data` serves) counted per second over the request's window.

use super::super::eval::{Args, Ctx, EvalError, R};
use super::super::series::Series;
use super::super::Engine;
use super::more_spec::validate;
use crate::QueryError;
use tsgate_core::meta::annotation::Annotation;
use tsgate_store::StoreError;

pub fn call(ctx: &Ctx, name: &str, a: &Args) -> Option<R<Vec<Series>>> {
    (name == "events").then(|| {
        validate(a)?;
        let tags: Vec<String> = (0..a.call.args.len())
            .map(|i| a.string(i, "tags"))
            .collect::<R<_>>()?;
        Ok(vec![events(ctx, &tags)?])
    })
}

/// One value a second over `[from, until)`: how many events (having every tag asked, or any
/// event for the single tag `*`) start in that second; null where none do.
fn events(ctx: &Ctx, tags: &[String]) -> R<Series> {
    let name = format!("events(\"{}\")", tags.join("\", \""));
    let all = tags.len() == 1 && tags[0] == "*";
    let (start, end) = (ctx.from, ctx.until);
    super::more_transform::check_steps(ctx, 1)?;
    let n = (end - start).max(0) as usize;
    let mut values: Vec<Option<f64>> = vec![None; n];
    for (t, ev_tags) in ctx.source.events(start, end)? {
        if !all && !tags.iter().all(|w| ev_tags.contains(w)) {
            continue;
        }
        let Some(slot) = usize::try_from(t - start)
            .ok()
            .and_then(|i| values.get_mut(i))
        else {
            continue;
        };
        *slot = Some(slot.unwrap_or(0.0) + 1.0);
    }
    let mut s = Series::new(name, start, 1, values);
    s.consolidation = "sum".into();
    s.xff = ctx.xff();
    Ok(s)
}

/// A global annotation as graphite-web's events read it.
pub struct Event {
    /// Its start, in seconds.
    pub when: i64,
    /// Its custom field `tags`, split at spaces and commas.
    pub tags: Vec<String>,
    pub note: Annotation,
}

/// The global annotations starting in `[from, until]` seconds (negative: 0), as events: the one
/// reader of `events()` targets and `/events/get_data`.
pub fn read_events(state: &Engine, from: i64, until: i64) -> Result<Vec<Event>, StoreError> {
    let q = &state.query;
    let notes = tsgate_core::meta::annotation::scan_global(
        q.store.as_ref(),
        &q.layout,
        &q.table,
        from.max(0) as u64 * 1000,
        until.max(0) as u64 * 1000 + 999,
    )?;
    Ok(notes
        .into_iter()
        .map(|note| {
            let tags = note
                .custom
                .as_ref()
                .and_then(|c| c.get("tags").cloned().flatten())
                .map(|t| {
                    t.split([' ', ','])
                        .filter(|x| !x.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            Event {
                when: (note.start_ms() / 1000) as i64,
                tags,
                note,
            }
        })
        .collect())
}

/// The events' times and tags, for `events()`.
pub fn stored_events(state: &Engine, from: i64, until: i64) -> R<Vec<(i64, Vec<String>)>> {
    Ok(read_events(state, from, until)
        .map_err(|e| EvalError::Query(QueryError::from(e)))?
        .into_iter()
        .map(|e| (e.when, e.tags))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::super::super::eval::{MemSource, Points, Source};
    use super::super::super::index::Entry;
    use super::*;
    use std::sync::Arc;

    struct WithEvents(MemSource, Vec<(i64, Vec<String>)>);

    impl Source for WithEvents {
        fn entries(&self) -> R<Arc<Vec<Entry>>> {
            self.0.entries()
        }
        fn points(&self, e: &[&Entry], from: i64, until: i64) -> R<Points> {
            self.0.points(e, from, until)
        }
        fn events(&self, _from: i64, _until: i64) -> R<Vec<(i64, Vec<String>)>> {
            Ok(self.1.clone())
        }
    }

    #[test]
    fn counts_events_per_second_by_tag() {
        let t = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let src = WithEvents(
            MemSource(vec![]),
            vec![
                (3, t(&["deploy", "web"])),
                (3, t(&["deploy"])),
                (7, t(&["web"])),
                (10, t(&[])),
            ],
        );
        let ctx = Ctx {
            source: &src,
            from: 0,
            until: 10,
            now: 10,
            xff: 0.0,
            tz: chrono_tz::UTC,
            xff_set: Default::default(),
        };
        let e = |q: &str| {
            ctx.eval(&crate::graphite::parser::parse(q).unwrap())
                .unwrap()
        };
        let all = &e("events('*')")[0];
        assert_eq!(all.name, "events(\"*\")");
        assert_eq!((all.start, all.step, all.values.len()), (0, 1, 10));
        assert_eq!(all.values[3], Some(2.0));
        assert_eq!(all.values[7], Some(1.0));
        assert_eq!(all.values.iter().flatten().count(), 2);
        let web = &e("events('deploy','web')")[0];
        assert_eq!(web.name, "events(\"deploy\", \"web\")");
        assert_eq!(web.values[3], Some(1.0));
        assert_eq!(web.values[7], None);
    }
}
