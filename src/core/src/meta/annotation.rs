//! Annotations: notes attached to a series (local) or to nothing (global), stored in the data
//! table exactly as OpenTSDB 2.4 stores them: the series' row at the note's hour (or an all-zero
//! metric row for globals), qualifier `0x01` + offset (with the divide-by-1000 quirk, see
//! `schema::annotation::qualifier`), and a JSON value whose bytes are the CAS token of updates.

use super::json::{custom_json, esc, StrMap};
use super::{MetaError, MetaResult};
use serde::ser::{Serialize, SerializeStruct, Serializer};
use tsgate_schema::column::ANNOTATION_PREFIX;
use tsgate_schema::rowkey::{base_time, is_ms, ROW_SPAN};
use tsgate_schema::KeyLayout;
use tsgate_store::{Mutation, RowMutations, Scan, Store, StoreError};

pub use tsgate_schema::DATA_FAMILY as FAMILY;

/// One annotation. `tsuid` is empty for a global note; times are as given (seconds or ms).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Annotation {
    pub tsuid: String,
    pub start_time: u64,
    pub end_time: u64,
    pub description: String,
    pub notes: String,
    pub custom: Option<StrMap>,
}

/// The API form (OpenTSDB's Jackson order: `tsuid`, `description`, `notes`, `custom` only when
/// set, `endTime`, `startTime`).
impl Serialize for Annotation {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Annotation", 6)?;
        st.serialize_field("tsuid", &self.tsuid)?;
        st.serialize_field("description", &self.description)?;
        st.serialize_field("notes", &self.notes)?;
        if let Some(c) = &self.custom {
            st.serialize_field("custom", &StrMap(c.sorted().into_iter().cloned().collect()))?;
        }
        st.serialize_field("endTime", &self.end_time)?;
        st.serialize_field("startTime", &self.start_time)?;
        st.end()
    }
}

/// The stored JSON as OpenTSDB writes it (no `tsuid` for globals, `custom` keys sorted).
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    #[serde(default)]
    tsuid: Option<String>,
    #[serde(default)]
    start_time: u64,
    #[serde(default)]
    end_time: u64,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    notes: Option<String>,
    #[serde(default)]
    custom: Option<StrMap>,
}

impl Annotation {
    pub fn storage_json(&self) -> String {
        let mut o = String::from("{");
        if !self.tsuid.is_empty() {
            o.push_str(&format!("\"tsuid\":{},", esc(&self.tsuid)));
        }
        o.push_str(&format!(
            "\"startTime\":{},\"endTime\":{},\"description\":{},\"notes\":{},\"custom\":{}}}",
            self.start_time,
            self.end_time,
            esc(&self.description),
            esc(&self.notes),
            custom_json(&self.custom, true)
        ));
        o
    }

    pub fn from_storage(v: &[u8]) -> Result<Annotation, serde_json::Error> {
        let s: Stored = serde_json::from_slice(v)?;
        Ok(Annotation {
            tsuid: s.tsuid.unwrap_or_default(),
            start_time: s.start_time,
            end_time: s.end_time,
            description: s.description.unwrap_or_default(),
            notes: s.notes.unwrap_or_default(),
            custom: s.custom,
        })
    }

    /// The start in milliseconds (stored starts may be seconds or ms).
    pub fn start_ms(&self) -> u64 {
        if is_ms(self.start_time) {
            self.start_time
        } else {
            self.start_time * 1000
        }
    }
}

/// The row of a note: the series' data row at the note's hour, or for a global note (empty
/// TSUID) salt-width and metric-width zero bytes + base time, never salted.
pub fn row_key(layout: &KeyLayout, tsuid: &[u8], start: u64) -> Vec<u8> {
    let base = base_time(start);
    if tsuid.is_empty() {
        let mut k = vec![0u8; layout.salt_width + layout.metric_width];
        k.extend_from_slice(&base.to_be_bytes());
        return k;
    }
    layout.row_key(tsuid, base)
}

pub fn qualifier(start: u64) -> Vec<u8> {
    tsgate_schema::annotation::qualifier(start)
}

fn is_note_qualifier(q: &[u8]) -> bool {
    q.first() == Some(&ANNOTATION_PREFIX) && (q.len() == 3 || q.len() == 5)
}

/// What a POST/PUT carried: `None` = the caller did not set the field.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AnnotationUpdate {
    #[serde(default)]
    pub tsuid: Option<String>,
    #[serde(default)]
    pub start_time: Option<u64>,
    #[serde(default)]
    pub end_time: Option<u64>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub notes: Option<String>,
    #[serde(default)]
    pub custom: Option<StrMap>,
}

impl AnnotationUpdate {
    pub fn tsuid_bytes(&self) -> MetaResult<Vec<u8>> {
        match self.tsuid.as_deref() {
            None | Some("") => Ok(Vec::new()),
            Some(t) => super::parse_uid_hex(t, "TSUID"),
        }
    }

    pub fn start(&self) -> u64 {
        self.start_time.unwrap_or(0)
    }

    /// OpenTSDB tracks changes against a blank note: a field counts when it differs from its
    /// default. The TSUID and start time address the note and are not changes.
    fn changed(&self) -> bool {
        self.end_time.is_some_and(|t| t != 0)
            || self.description.as_deref().is_some_and(|s| !s.is_empty())
            || self.notes.as_deref().is_some_and(|s| !s.is_empty())
            || self.custom.is_some()
    }

    /// PUT replaces every user field; POST keeps the stored value of fields not set.
    fn apply(&self, stored: Option<Annotation>, overwrite: bool) -> Annotation {
        let base = match (stored, overwrite) {
            (Some(s), false) => s,
            (s, _) => Annotation {
                start_time: s.map(|s| s.start_time).unwrap_or(0),
                ..Default::default()
            },
        };
        let start = self.start();
        // The earliest non-zero start wins (the cell is the same either way).
        let start_time = if base.start_time > 0 && base.start_time < start {
            base.start_time
        } else {
            start
        };
        Annotation {
            tsuid: self.tsuid.clone().unwrap_or_default(),
            start_time,
            end_time: self.end_time.filter(|&t| t != 0).unwrap_or(base.end_time),
            description: self
                .description
                .clone()
                .filter(|s| !s.is_empty())
                .unwrap_or(base.description),
            notes: self
                .notes
                .clone()
                .filter(|s| !s.is_empty())
                .unwrap_or(base.notes),
            custom: self.custom.clone().or(base.custom),
        }
    }
}

/// Reads one note and its stored bytes (the CAS token).
pub fn get(
    store: &dyn Store,
    layout: &KeyLayout,
    table: &str,
    tsuid: &[u8],
    start: u64,
) -> MetaResult<Option<(Annotation, Vec<u8>)>> {
    let row = row_key(layout, tsuid, start);
    let q = qualifier(start);
    let cells = store.get(table, &row, &[FAMILY])?;
    let Some(c) = cells.into_iter().find(|c| c.qualifier == q) else {
        return Ok(None);
    };
    let note = Annotation::from_storage(&c.value)
        .map_err(|e| MetaError::CasFailed(format!("Unable to parse the stored annotation: {e}")))?;
    Ok(Some((note, c.value)))
}

/// Creates or updates a note (POST merge / PUT replace), compare-and-set against the stored
/// JSON. Returns the note as stored.
pub fn sync(
    store: &dyn Store,
    layout: &KeyLayout,
    table: &str,
    req: &AnnotationUpdate,
    overwrite: bool,
) -> MetaResult<Annotation> {
    let start = req.start();
    if start < 1 {
        return Err(MetaError::bad("The start timestamp has not been set"));
    }
    if !req.changed() {
        return Err(MetaError::NotModified);
    }
    let tsuid = req.tsuid_bytes()?;
    let stored = get(store, layout, table, &tsuid, start)?;
    let (old, token) = match stored {
        Some((n, b)) => (Some(n), Some(b)),
        None => (None, None),
    };
    let note = req.apply(old, overwrite);
    let row = row_key(layout, &tsuid, start);
    if !store.check_and_put(
        table,
        &row,
        FAMILY,
        &qualifier(start),
        token.as_deref(),
        note.storage_json().as_bytes(),
    )? {
        return Err(MetaError::CasFailed(
            "Failed to save the Annotation to storage".into(),
        ));
    }
    Ok(get(store, layout, table, &tsuid, start)?
        .map(|x| x.0)
        .unwrap_or(note))
}

pub fn delete(
    store: &dyn Store,
    layout: &KeyLayout,
    table: &str,
    tsuid: &[u8],
    start: u64,
) -> MetaResult<()> {
    if start < 1 {
        return Err(MetaError::bad("The start timestamp has not been set"));
    }
    let row = row_key(layout, tsuid, start);
    store.mutate(
        table,
        vec![RowMutations {
            row,
            mutations: vec![Mutation::Delete {
                family: FAMILY.to_vec(),
                qualifier: qualifier(start),
            }],
        }],
    )?;
    Ok(())
}

/// Called with (row key, qualifier, note).
type NoteVisitor<'a> = &'a mut dyn FnMut(&[u8], &[u8], Annotation);

/// Visits every note of a series (or the globals, `tsuid` empty) whose start lies in
/// `[start_ms, end_ms]`: rows from the start hour to the end hour, annotation columns only.
fn visit(
    store: &dyn Store,
    layout: &KeyLayout,
    table: &str,
    tsuid: &[u8],
    start_ms: u64,
    end_ms: u64,
    f: NoteVisitor<'_>,
) -> Result<(), StoreError> {
    let first = row_key(layout, tsuid, start_ms / 1000);
    let last_base =
        (base_time(end_ms / 1000) as u64 + ROW_SPAN).min(u32::MAX as u64 - ROW_SPAN + 1);
    let stop = row_key(layout, tsuid, last_base);
    let key_len = first.len();
    let tags = if tsuid.is_empty() {
        &[][..]
    } else {
        &tsuid[layout.metric_width..]
    };
    let scan = Scan {
        start: first,
        stop,
        families: vec![FAMILY.to_vec()],
        ..Default::default()
    };
    for row in store.scan(table, &scan)? {
        let row = row?;
        // Other series of the same metric interleave with this one's rows.
        if row.key.len() != key_len || !row.key.ends_with(tags) {
            continue;
        }
        for c in &row.cells {
            if !is_note_qualifier(&c.qualifier) {
                continue;
            }
            let Ok(note) = Annotation::from_storage(&c.value) else {
                tracing::warn!(row = %tsgate_schema::hex_upper(&row.key), "skipping an undecodable annotation");
                continue;
            };
            let t = note.start_ms();
            if t >= start_ms && t <= end_ms {
                f(&row.key, &c.qualifier, note);
            }
        }
    }
    Ok(())
}

/// The notes of the given series whose start lies in `[start_ms, end_ms]`, by series then time.
/// For the query engine (`/api/query` results carry them unless `noAnnotations`).
pub fn scan_local(
    store: &dyn Store,
    layout: &KeyLayout,
    table: &str,
    tsuids: &[Vec<u8>],
    start_ms: u64,
    end_ms: u64,
) -> Result<Vec<Annotation>, StoreError> {
    let mut out = Vec::new();
    for t in tsuids.iter().filter(|t| t.len() > layout.metric_width) {
        visit(store, layout, table, t, start_ms, end_ms, &mut |_, _, n| {
            out.push(n)
        })?;
    }
    Ok(out)
}

/// The global notes whose start lies in `[start_ms, end_ms]`, in time order
/// (`/api/annotations`, and `globalAnnotations` in queries).
pub fn scan_global(
    store: &dyn Store,
    layout: &KeyLayout,
    table: &str,
    start_ms: u64,
    end_ms: u64,
) -> Result<Vec<Annotation>, StoreError> {
    let mut out = Vec::new();
    visit(
        store,
        layout,
        table,
        &[],
        start_ms,
        end_ms,
        &mut |_, _, n| out.push(n),
    )?;
    Ok(out)
}

/// Every note of the data table, in row order (`/api/search/annotation`): a full scan that
/// keeps annotation columns only.
pub fn scan_all(
    store: &dyn Store,
    table: &str,
    mut f: impl FnMut(Annotation),
) -> Result<(), StoreError> {
    let scan = Scan {
        families: vec![FAMILY.to_vec()],
        ..Default::default()
    };
    for row in store.scan(table, &scan)? {
        let row = row?;
        for c in row.cells.iter().filter(|c| is_note_qualifier(&c.qualifier)) {
            match Annotation::from_storage(&c.value) {
                Ok(n) => f(n),
                Err(_) => {
                    tracing::warn!(row = %tsgate_schema::hex_upper(&row.key), "skipping an undecodable annotation")
                }
            }
        }
    }
    Ok(())
}

/// Deletes the notes of the series (and the globals when `global`) in `[start_ms, end_ms]`;
/// returns how many (`/api/annotation/bulk` DELETE).
pub fn delete_range(
    store: &dyn Store,
    layout: &KeyLayout,
    table: &str,
    tsuids: &[Vec<u8>],
    global: bool,
    start_ms: u64,
    end_ms: u64,
) -> Result<u64, StoreError> {
    let mut doomed: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut targets: Vec<&[u8]> = tsuids.iter().map(|t| t.as_slice()).collect();
    if global {
        targets.push(&[]);
    }
    for t in targets {
        visit(
            store,
            layout,
            table,
            t,
            start_ms,
            end_ms,
            &mut |row, q, _| doomed.push((row.to_vec(), q.to_vec())),
        )?;
    }
    let n = doomed.len() as u64;
    let batch: Vec<RowMutations> = doomed
        .into_iter()
        .map(|(row, q)| RowMutations {
            row,
            mutations: vec![Mutation::Delete {
                family: FAMILY.to_vec(),
                qualifier: q,
            }],
        })
        .collect();
    if !batch.is_empty() {
        store.mutate(table, batch)?;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tsgate_schema::{hex_upper, parse_hex};

    #[test]
    fn rows_and_qualifiers_from_opentsdb_tests() {
        let l = KeyLayout::default();
        let tsuid = parse_hex("000001000001000001").unwrap();
        assert_eq!(
            hex_upper(&row_key(&l, &tsuid, 1388450562)),
            "00000152C20900000001000001"
        );
        assert_eq!(hex_upper(&qualifier(1388450562)), "010A02");
        assert_eq!(
            hex_upper(&row_key(&l, &tsuid, 1388450562500)),
            "00000152C20900000001000001"
        );
        assert_eq!(hex_upper(&qualifier(1388450562500)), "01002719C4");
        assert_eq!(hex_upper(&row_key(&l, &[], 1328140800)), "0000004F29D200");
        assert_eq!(hex_upper(&qualifier(1328140800)), "010000");
        assert_eq!(hex_upper(&qualifier(1328140800500)), "01000001F4");
        assert_eq!(hex_upper(&qualifier(1292148123)), "01007B");
        // The quirk: a second timestamp divisible by 1000 gets an offset from another hour,
        // while the row keeps the real hour.
        assert_eq!(
            hex_upper(&row_key(&l, &tsuid, 1388449000)),
            "00000152C20900000001000001"
        );
        assert_eq!(hex_upper(&qualifier(1388449000)), "010991");
        // Salted layouts salt local rows like data, never global ones.
        let salted = KeyLayout {
            salt_width: 1,
            ..Default::default()
        };
        assert_eq!(
            hex_upper(&row_key(&salted, &tsuid, 1356998400)),
            "0800000150E22700000001000001"
        );
        assert_eq!(
            hex_upper(&row_key(&salted, &[], 1328140800)),
            "000000004F29D200"
        );
    }

    #[test]
    fn storage_json_field_order_and_sorted_custom() {
        let mut custom = StrMap::default();
        custom.insert("owner".into(), Some("jdoe".into()));
        custom.insert("dept".into(), Some("ops".into()));
        let n = Annotation {
            tsuid: "000001000001000001".into(),
            start_time: 1388450562,
            end_time: 1419984000,
            description: "Hello!".into(),
            notes: "My Notes".into(),
            custom: Some(custom),
        };
        assert_eq!(
            n.storage_json(),
            r#"{"tsuid":"000001000001000001","startTime":1388450562,"endTime":1419984000,"description":"Hello!","notes":"My Notes","custom":{"dept":"ops","owner":"jdoe"}}"#
        );
        assert_eq!(
            Annotation::from_storage(n.storage_json().as_bytes())
                .unwrap()
                .storage_json(),
            n.storage_json()
        );
        assert_eq!(
            serde_json::to_string(&n).unwrap(),
            r#"{"tsuid":"000001000001000001","description":"Hello!","notes":"My Notes","custom":{"dept":"ops","owner":"jdoe"},"endTime":1419984000,"startTime":1388450562}"#
        );
        let g = Annotation {
            start_time: 1328140800,
            description: "Global".into(),
            ..Default::default()
        };
        assert_eq!(
            g.storage_json(),
            r#"{"startTime":1328140800,"endTime":0,"description":"Global","notes":"","custom":null}"#
        );
        assert_eq!(
            serde_json::to_string(&g).unwrap(),
            r#"{"tsuid":"","description":"Global","notes":"","endTime":0,"startTime":1328140800}"#
        );
    }

    #[test]
    fn post_merges_and_put_replaces() {
        let stored = Annotation {
            tsuid: "01".into(),
            start_time: 10,
            end_time: 20,
            description: "d".into(),
            notes: "n".into(),
            custom: None,
        };
        let req = AnnotationUpdate {
            tsuid: Some("01".into()),
            start_time: Some(10),
            notes: Some("new".into()),
            ..Default::default()
        };
        let merged = req.apply(Some(stored.clone()), false);
        assert_eq!(
            (
                merged.description.as_str(),
                merged.notes.as_str(),
                merged.end_time
            ),
            ("d", "new", 20)
        );
        let replaced = req.apply(Some(stored), true);
        assert_eq!(
            (
                replaced.description.as_str(),
                replaced.notes.as_str(),
                replaced.end_time
            ),
            ("", "new", 0)
        );
        assert!(!AnnotationUpdate {
            start_time: Some(10),
            description: Some(String::new()),
            ..Default::default()
        }
        .changed());
    }
}
