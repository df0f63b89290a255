//! Cloud Bigtable through Google's emulator, started by each test (skipped loudly when it is
//! not installed, failed under CI): `tsgate bigtable create-tables` and its `--print` form, and
//! the bytes a real `tsgate serve` leaves in `tsdb`, read back with Google's own `cbt`.

mod common;
use common::*;
use std::process::Command;

/// `cbt -project p -instance <instance> ARGS…` against the backend's emulator.
fn cbt(b: &Backend, instance: &str, args: &[&str]) -> Vec<u8> {
    let o = Command::new("cbt")
        .args(["-project", "p", "-instance", instance])
        .args(args)
        .envs(b.envs())
        .output()
        .expect("run cbt (package google-cloud-cli-cbt)");
    assert!(
        o.status.success(),
        "cbt {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

/// A value as `cbt read` prints it: a Go-quoted string.
fn go_unquote(s: &[u8]) -> Vec<u8> {
    let s = s.strip_prefix(b"\"").unwrap().strip_suffix(b"\"").unwrap();
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        if s[i] != b'\\' {
            out.push(s[i]);
            i += 1;
            continue;
        }
        match s[i + 1] {
            b'x' => {
                out.push(
                    u8::from_str_radix(std::str::from_utf8(&s[i + 2..i + 4]).unwrap(), 16).unwrap(),
                );
                i += 4;
            }
            b'n' => {
                out.push(b'\n');
                i += 2;
            }
            b't' => {
                out.push(b'\t');
                i += 2;
            }
            c => {
                out.push(c);
                i += 2;
            }
        }
    }
    out
}

/// `cbt read TABLE` as (row key, family, qualifier, value), from its raw output: rows between
/// dashed lines, the key raw on the first line, each cell a `  fam:qual  @ time` line (raw
/// bytes, padded) and a quoted value.
/// (row key, family, qualifier, value)
type CbtCell = (Vec<u8>, String, Vec<u8>, Vec<u8>);

fn cbt_cells(out: &[u8]) -> Vec<CbtCell> {
    let mut cells = Vec::new();
    let mut key = Vec::new();
    let lines: Vec<&[u8]> = out.split(|&b| b == b'\n').collect();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        if l.starts_with(b"----") {
            key = lines[i + 1].to_vec();
            i += 2;
            continue;
        }
        if l.starts_with(b"  ") && !l.starts_with(b"    ") {
            let l = &l[2..];
            let at = l.windows(3).rposition(|w| w == b" @ ").unwrap();
            let mut col = &l[..at];
            while col.last() == Some(&b' ') {
                col = &col[..col.len() - 1];
            }
            let colon = col.iter().position(|&b| b == b':').unwrap();
            let value = lines[i + 1].trim_ascii();
            cells.push((
                key.clone(),
                String::from_utf8(col[..colon].to_vec()).unwrap(),
                col[colon + 1..].to_vec(),
                go_unquote(value),
            ));
            i += 2;
            continue;
        }
        i += 1;
    }
    cells
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn create_tables_and_the_printed_cbt_commands() {
    let Some(b) = Backend::bigtable("unused") else {
        return;
    };
    let args = [
        "bigtable",
        "--bigtable-project",
        "p",
        "--bigtable-instance",
        "made",
    ];
    let run = |extra: &[&str]| {
        let o = Command::new(bin())
            .args(args)
            .args(["create-tables"])
            .args(extra)
            .envs(b.envs())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        stdout(&o)
    };
    let first = run(&[]);
    assert_eq!(
        first,
        "created tsdb-uid\ncreated tsdb\ncreated tsdb-tree\ncreated tsdb-meta\n"
    );
    assert_eq!(
        run(&[]),
        "exists tsdb-uid\nexists tsdb\nexists tsdb-tree\nexists tsdb-meta\n",
        "a second run leaves them alone"
    );
    let tables = String::from_utf8(cbt(&b, "made", &["ls"])).unwrap();
    assert_eq!(tables, "tsdb\ntsdb-meta\ntsdb-tree\ntsdb-uid\n");
    let families = String::from_utf8(cbt(&b, "made", &["ls", "tsdb-uid"])).unwrap();
    for f in ["id", "name"] {
        assert!(
            families
                .lines()
                .any(|l| l.starts_with(f) && l.contains("versions() > 1")),
            "family {f} keeps one version: {families}"
        );
    }
    // The printed commands, run as printed, make the same tables in another instance.
    let script = run(&["--print", "--max-age-days", "30"]);
    let script = script.replace("-instance made ", "-instance printed ");
    let o = Command::new("sh")
        .arg("-c")
        .arg(&script)
        .envs(b.envs())
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let tables = String::from_utf8(cbt(&b, "printed", &["ls"])).unwrap();
    assert_eq!(tables, "tsdb\ntsdb-meta\ntsdb-tree\ntsdb-uid\n");
    let data = String::from_utf8(cbt(&b, "printed", &["ls", "tsdb"])).unwrap();
    assert!(
        data.contains("age() > 30d") && data.contains("versions() > 1"),
        "{data}"
    );
}

/// OpenTSDB's own example point, put over telnet into an empty instance, then a clean stop:
/// `cbt` (Google's tool, not tsgate) finds exactly OpenTSDB's row and cell.
#[test]
fn a_put_leaves_opentsdbs_bytes_in_bigtable() {
    let Some(b) = Backend::bigtable("exact") else {
        return;
    };
    assert!(cbt_cells(&cbt(&b, "exact", &["read", "tsdb"])).is_empty());
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_on(&b, dir.path(), None);
    let mut t = s.telnet();
    t.send("put sys.cpu.user 1356998400 42 host=web01\n");
    assert!(t.sync().is_empty(), "the put was accepted");
    s.stop();
    let cells = cbt_cells(&cbt(&b, "exact", &["read", "tsdb"]));
    let view: Vec<(String, String, String, String)> = cells
        .iter()
        .map(|(k, f, q, v)| (hex(k), f.clone(), hex(q), hex(v)))
        .collect();
    assert_eq!(
        view,
        vec![(
            "00000150e22700000001000001".to_string(),
            "t".to_string(),
            "0000".to_string(),
            "2a".to_string()
        )]
    );
    // The UID table as OpenTSDB lays it out: names both ways and the three counters.
    let uids = cbt_cells(&cbt(&b, "exact", &["read", "tsdb-uid"]));
    let has = |k: &[u8], f: &str, q: &[u8], v: &[u8]| {
        uids.iter()
            .any(|c| c.0 == k && c.1 == f && c.2 == q && c.3 == v)
    };
    assert!(
        has(b"sys.cpu.user", "id", b"metrics", &[0, 0, 1]),
        "{uids:?}"
    );
    assert!(
        has(&[0, 0, 1], "name", b"metrics", b"sys.cpu.user"),
        "{uids:?}"
    );
    assert!(has(b"web01", "id", b"tagv", &[0, 0, 1]), "{uids:?}");
    assert!(has(&[0], "id", b"metrics", &1u64.to_be_bytes()), "{uids:?}");
    // And tsgate reads it back after the restart.
    let s = Server::start_on(&b, dir.path(), None);
    let v = s.wait_points(
        "/api/query?start=1356998400&end=1356998460&m=sum:sys.cpu.user",
        1,
    );
    assert_eq!(v[0]["dps"]["1356998400"], 42, "{v}");
    s.stop();
}

/// The store's own config for the backend's emulator.
fn store_on(b: &Backend, instance: &str) -> tsgate::store::bigtable::BigtableStore {
    use tsgate::store::bigtable::{BigtableConfig, BigtableStore};
    BigtableStore::new(&BigtableConfig {
        project: "p".into(),
        instance: instance.into(),
        emulator_host: b.emulator_addr().unwrap().to_string(),
        ..Default::default()
    })
    .unwrap()
}

/// `MutateRows` answers per row: a row the service refuses (a family the table lacks) fails
/// the batch by name, and the other rows of the batch are written.
#[test]
fn a_refused_row_fails_the_batch_by_name() {
    use tsgate::store::bigtable::BigtableError;
    use tsgate::store::{RowMutations, Store, StoreError};
    let Some(b) = Backend::bigtable("rows") else {
        return;
    };
    let s = store_on(&b, "rows");
    let e = s
        .mutate(
            "tsdb",
            vec![
                RowMutations::put(b"good".to_vec(), b"t", b"q".to_vec(), b"1".to_vec()),
                RowMutations::put(b"bad".to_vec(), b"nope", b"q".to_vec(), b"2".to_vec()),
            ],
        )
        .unwrap_err();
    match e {
        StoreError::Bigtable {
            source: BigtableError::RowsFailed { failed, rows, .. },
            ..
        } => assert_eq!((failed, rows), (1, 2)),
        other => panic!("{other:?}"),
    }
    assert_eq!(s.get("tsdb", b"good", &[]).unwrap()[0].value, b"1");
    assert!(s.get("tsdb", b"bad", &[]).unwrap().is_empty());
    // Adding to a cell that is not an 8-byte counter is that error, named.
    assert!(matches!(
        s.increment("tsdb", b"good", b"t", b"q", 1),
        Err(StoreError::NotACounter(_))
    ));
    assert_eq!(s.increment("tsdb", b"good", b"t", b"n", 2).unwrap(), 2);
}

/// With nothing listening, a call is retried `retries` times with backoff, then fails with
/// the address named.
#[test]
fn an_unreachable_service_is_retried_then_named() {
    use tsgate::store::bigtable::{BigtableConfig, BigtableStore};
    use tsgate::store::Store;
    let port = free_port();
    let s = BigtableStore::new(&BigtableConfig {
        project: "p".into(),
        instance: "i".into(),
        emulator_host: format!("127.0.0.1:{port}"),
        retries: 3,
        retry_backoff_ms: 5,
        ..Default::default()
    })
    .unwrap();
    let t = std::time::Instant::now();
    let e = s.get("tsdb", b"r", &[]).unwrap_err().to_string();
    assert!(
        e.contains(&format!("cannot connect to Bigtable at 127.0.0.1:{port}")),
        "{e}"
    );
    assert_eq!(s.retries(), 3);
    assert_eq!(s.calls(), 4, "the first try and three retries");
    assert!(
        t.elapsed() >= std::time::Duration::from_millis(5 + 10 + 20),
        "backoff doubles"
    );
}

/// A connection the service closed (here: the emulator stopped, and started again on the same
/// port, empty) is opened anew by the next call; the calls in between fail with the address
/// named, after their retries.
#[test]
fn a_lost_connection_is_opened_again() {
    use tsgate::store::bigtable::{tables, BigtableConfig, BigtableStore};
    use tsgate::store::{RowMutations, Store, TableNames};
    use tsgate_testkit::bigtable_emulator::Emulator;
    let port = free_port();
    let Some(emu) = Emulator::start_on(port) else {
        return;
    };
    let s = BigtableStore::new(&BigtableConfig {
        project: "p".into(),
        instance: "i".into(),
        emulator_host: emu.addr().to_string(),
        channels: 2,
        retries: 1,
        retry_backoff_ms: 5,
        ..Default::default()
    })
    .unwrap();
    let put_get = |v: &[u8]| {
        tables::create_tables(&s, &TableNames::default(), None).unwrap();
        s.mutate(
            "tsdb",
            vec![RowMutations::put(
                b"r".to_vec(),
                b"t",
                b"q".to_vec(),
                v.to_vec(),
            )],
        )
        .unwrap();
        assert_eq!(s.get("tsdb", b"r", &[]).unwrap()[0].value, v);
    };
    put_get(b"1");
    drop(emu);
    let e = s.get("tsdb", b"r", &[]).unwrap_err().to_string();
    assert!(e.contains(&format!("127.0.0.1:{port}")), "{e}");
    let _emu = Emulator::start_on(port).unwrap();
    put_get(b"2");
}
