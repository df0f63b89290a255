//! The command line: `uid`, `import`, `scan` filters and `fsck` (on both backends), and
//! `hbase create-tables`.

mod common;
use common::*;
use std::io::Write;
use std::sync::Arc;

on_both_backends!(
    uid_assign_grep_rename,
    import_plain_and_gzip_then_scan_by_metric_and_time,
    fsck_finds_and_fixes_bad_and_duplicate_cells
);

/// The store a stopped server used, opened in this process.
fn open_store(b: &Backend, data: &std::path::Path) -> tsgate::store::SharedStore {
    let specs = tsgate::store::TableNames::default().specs();
    if let Some(instance) = b.bigtable_instance() {
        let cfg = tsgate::store::bigtable::BigtableConfig {
            project: "p".into(),
            instance: instance.into(),
            emulator_host: b.emulator_addr().unwrap().into(),
            ..Default::default()
        };
        return Arc::new(tsgate::store::bigtable::BigtableStore::new(&cfg).unwrap());
    }
    match b.thrift_addr() {
        Some(addr) => {
            let cfg = tsgate::store::hbase::HBaseConfig {
                thrift: addr,
                ..Default::default()
            };
            Arc::new(tsgate::store::hbase::HBaseStore::open(&cfg, &specs).unwrap())
        }
        None => Arc::new(
            tsgate::store::embedded::EmbeddedStore::open(&data.join("store"), &specs).unwrap(),
        ),
    }
}

fn d(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

fn uid_assign_grep_rename(b: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let o = tsgate_on(
        b,
        &[
            "uid",
            "--data-dir",
            d(dir.path()),
            "assign",
            "metrics",
            "sys.cpu.user",
            "sys.cpu.idle",
        ],
    );
    assert!(o.status.success());
    assert_eq!(
        stdout(&o),
        "metrics sys.cpu.user: 000001\nmetrics sys.cpu.idle: 000002\n"
    );
    let o = tsgate_on(
        b,
        &[
            "uid",
            "--data-dir",
            d(dir.path()),
            "assign",
            "metrics",
            "sys.cpu.user",
            "bad name",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("Name already exists with UID: 000001"),
        "{err}"
    );
    assert!(err.contains("illegal character"), "{err}");
    let o = tsgate_on(
        b,
        &[
            "uid",
            "--data-dir",
            d(dir.path()),
            "grep",
            "metrics",
            "idle$",
        ],
    );
    assert_eq!(stdout(&o), "metrics sys.cpu.idle: 000002\n");
    let o = tsgate_on(
        b,
        &[
            "uid",
            "--data-dir",
            d(dir.path()),
            "rename",
            "metrics",
            "sys.cpu.idle",
            "sys.cpu.rest",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = tsgate_on(b, &["uid", "--data-dir", d(dir.path()), "grep", "cpu"]);
    assert_eq!(
        stdout(&o),
        "metrics sys.cpu.rest: 000002\nmetrics sys.cpu.user: 000001\n"
    );
}

fn import_plain_and_gzip_then_scan_by_metric_and_time(b: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let plain = dir.path().join("a.txt");
    std::fs::write(&plain, "sys.cpu.user 1356998400 42 host=web01\nsys.cpu.user 1356998410 43 host=web01\nnot a line\nsys.mem 1357002000 1.5 host=web01\n").unwrap();
    let gz = dir.path().join("b.txt.gz");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::default(),
    );
    writeln!(enc, "sys.cpu.user 1357002000 7 host=web02").unwrap();
    enc.finish().unwrap();
    let o = tsgate_on(
        b,
        &[
            "import",
            "--quiet",
            "--data-dir",
            d(&data),
            d(&plain),
            d(&gz),
        ],
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "a rejected line makes the exit status 1"
    );
    assert!(
        stdout(&o).contains("imported 4 points, 1 rejected"),
        "{}",
        stdout(&o)
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("a.txt:3"),
        "the bad line is named"
    );

    let rows = |args: &[&str]| {
        let mut a = vec!["scan", "--data-dir", d(&data)];
        a.extend_from_slice(args);
        stdout(&tsgate_on(b, &a)).lines().count()
    };
    assert_eq!(
        rows(&[]),
        3,
        "two hours of sys.cpu.user (two hosts), one of sys.mem"
    );
    assert_eq!(rows(&["--metric", "sys.cpu.user"]), 2);
    assert_eq!(
        rows(&["--metric", "sys.cpu.user", "--start", "1357002000"]),
        1
    );
    assert_eq!(
        rows(&["--metric", "sys.cpu.user", "--end", "1356998500"]),
        1
    );
    let s = Server::start_on(b, &data, None);
    let v = s.wait_points(
        "/api/query?start=1356998400&end=1357002000&m=sum:sys.cpu.user",
        3,
    );
    assert_eq!(v[0]["dps"]["1356998410"], 43);
}

fn fsck_finds_and_fixes_bad_and_duplicate_cells(b: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_on(b, dir.path(), None);
    let mut t = s.telnet();
    t.send("put fsck.m 1356998400 1 host=a\nput fsck.m 1356998410 2 host=a\n");
    t.sync();
    s.stop();
    let clean = tsgate_on(b, &["fsck", "--data-dir", d(dir.path())]);
    assert!(clean.status.success(), "{}", stdout(&clean));
    {
        let store = open_store(b, dir.path());
        let row = hex("00000150e22700000001000001");
        let put = |q: &str, v: &str| {
            store
                .mutate(
                    "tsdb",
                    vec![tsgate::store::RowMutations::put(
                        row.clone(),
                        b"t",
                        hex(q),
                        hex(v),
                    )],
                )
                .unwrap()
        };
        put("00070017", "00"); // a compacted column whose values are missing
        put("0000", "05"); // same second as the compacted point, another value
        store.flush().unwrap();
    }
    let o = tsgate_on(b, &["fsck", "--data-dir", d(dir.path())]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.contains("column 00070017: Corrupted value"), "{out}");
    assert!(out.contains("duplicate timestamps"), "{out}");
    if b.is_shared() {
        // On a shared store a row is compacted once its newest cell has settled.
        std::thread::sleep(
            tsgate::write::compactor::SETTLE + std::time::Duration::from_millis(100),
        );
    }
    let o = tsgate_on(b, &["fsck", "--fix", "--data-dir", d(dir.path())]);
    assert!(o.status.success(), "{}", stdout(&o));
    let o = tsgate_on(b, &["fsck", "--data-dir", d(dir.path())]);
    assert!(o.status.success(), "{}", stdout(&o));
    // The newest write of the duplicated second won; the other point is intact.
    assert_eq!(
        scan_on(b, dir.path(), "data"),
        vec!["tsdb 00000150e22700000001000001 t:000000a0 050200"]
    );
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn query_verb_prints_lines_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let mut t = s.telnet();
    t.send(
        "put q.m 1356998400 1 host=a\nput q.m 1356998400 2 host=b\nput q.m 1356998460 4 host=a\n",
    );
    t.sync();
    s.stop();
    let o = tsgate(&[
        "query",
        "--data-dir",
        d(dir.path()),
        "--start",
        "1356998400",
        "--end",
        "1356998500",
        "sum:q.m",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(stdout(&o), "q.m 1356998400 3\nq.m 1356998460 4\n");
    let o = tsgate(&[
        "query",
        "--data-dir",
        d(dir.path()),
        "--start",
        "1356998400",
        "--end",
        "1356998500",
        "none:q.m{host=b}",
    ]);
    assert_eq!(stdout(&o), "q.m 1356998400 2 host=b\n");
    let o = tsgate(&[
        "query",
        "--data-dir",
        d(dir.path()),
        "--start",
        "2013/01/01-00:00:00",
        "--end",
        "1356998500",
        "--json",
        "sum:1m-sum:q.m{host=a}",
    ]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        v[0]["dps"],
        serde_json::json!({"1356998400": 1.0, "1356998460": 4.0})
    );
    let o = tsgate(&[
        "query",
        "--data-dir",
        d(dir.path()),
        "--start",
        "1356998400",
        "sum:nope",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("No such name for 'metrics': 'nope'"));
}

#[test]
fn hbase_create_tables_through_thrift_or_as_a_shell_script() {
    let o = tsgate(&["hbase", "create-tables", "--print", "--compression", "LZ4"]);
    assert!(o.status.success());
    let script = stdout(&o);
    assert!(script.contains("create 'tsdb',\n  {NAME => 't', VERSIONS => 1, COMPRESSION => 'LZ4', BLOOMFILTER => 'ROW'}"), "{script}");
    assert!(
        script.contains("create 'tsdb-uid'")
            && script.contains("create 'tsdb-meta'")
            && script.contains("create 'tsdb-tree'")
    );
    assert!(
        !tsgate(&["hbase", "create-tables", "--compression", "ZSTD", "--print"])
            .status
            .success(),
        "unknown codecs are refused"
    );

    // Against a double without tables: serving refuses, create-tables makes them, twice is fine.
    let dir = tempfile::tempdir().unwrap();
    let double =
        tsgate_testkit::hbase_double::TestDouble::start(&dir.path().join("double"), "127.0.0.1:0")
            .unwrap();
    let addr = double.addr();
    let data = dir.path().join("data");
    let o = tsgate(&["scan", "--hbase-thrift", &addr, "--data-dir", d(&data)]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("tsgate hbase create-tables"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = tsgate(&[
        "hbase",
        "create-tables",
        "--hbase-thrift",
        &addr,
        "--compression",
        "SNAPPY",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        stdout(&o),
        "created tsdb-uid\ncreated tsdb\ncreated tsdb-tree\ncreated tsdb-meta\n"
    );
    let o = tsgate(&["hbase", "create-tables", "--hbase-thrift", &addr]);
    assert_eq!(
        stdout(&o),
        "exists tsdb-uid\nexists tsdb\nexists tsdb-tree\nexists tsdb-meta\n"
    );
    // Custom table names come from storage.tables.
    let cfg = dir.path().join("t.toml");
    std::fs::write(&cfg, "[storage.tables]\ndata = \"metrics\"\n").unwrap();
    let o = tsgate(&[
        "hbase",
        "create-tables",
        "--config",
        d(&cfg),
        "--hbase-thrift",
        &addr,
    ]);
    assert!(stdout(&o).contains("created metrics\n"), "{}", stdout(&o));
    let o = tsgate(&[
        "uid",
        "--hbase-thrift",
        &addr,
        "--data-dir",
        d(&data),
        "assign",
        "metrics",
        "sys.cpu.user",
    ]);
    assert_eq!(stdout(&o), "metrics sys.cpu.user: 000001\n");
    assert_eq!(double.open_scanners(), 0);
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_busy_port_is_reported_once() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("a"));
    let o = tsgate(&[
        "serve",
        "--data-dir",
        d(&dir.path().join("b")),
        "--listen",
        &s.addr,
        "--graphite-listen",
        "",
        "--pickle-listen",
        "",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("cannot listen on {}", s.addr)),
        "{err}"
    );
    assert_eq!(err.matches("Address already in use").count(), 1, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    s.stop();
}

#[test]
fn a_data_dir_that_cannot_be_made_is_named() {
    let dir = tempfile::tempdir().unwrap();
    // A regular file where a directory must go fails for root too (root ignores modes).
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let data = file.join("data");
    let listen = format!("127.0.0.1:{}", free_port());
    let serve = ["serve", "--data-dir", d(&data), "--listen", &listen];
    let uid = ["uid", "--data-dir", d(&data), "assign", "metrics", "m"];
    for args in [&serve[..], &uid[..]] {
        let o = tsgate(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = stderr(&o);
        assert!(err.contains(d(&data)), "{args:?}: {err}");
        assert!(err.contains("Not a directory"), "{args:?}: {err}");
    }
    // SAFETY: geteuid reads the process's credentials and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        use std::os::unix::fs::PermissionsExt;
        let ro = dir.path().join("read-only");
        std::fs::create_dir(&ro).unwrap();
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o500)).unwrap();
        let data = ro.join("data");
        let o = tsgate(&["serve", "--data-dir", d(&data), "--listen", &listen]);
        let err = stderr(&o);
        assert!(
            err.contains(d(&data)) && err.contains("Permission denied"),
            "{err}"
        );
    }
}

#[test]
fn offline_verbs_on_a_running_servers_data_dir_say_stop_it_first() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = Server::start(&data);
    let import = dir.path().join("points.txt");
    std::fs::write(&import, "m 1356998400 1 host=a\n").unwrap();
    let verbs: [&[&str]; 6] = [
        &["scan", "--data-dir", d(&data)],
        &["uid", "--data-dir", d(&data), "grep", "."],
        &["uid", "--data-dir", d(&data), "assign", "metrics", "m"],
        &["fsck", "--data-dir", d(&data)],
        &[
            "query",
            "--data-dir",
            d(&data),
            "--start",
            "1h-ago",
            "sum:m",
        ],
        &["import", "--quiet", "--data-dir", d(&data), d(&import)],
    ];
    for args in verbs {
        let o = tsgate(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = stderr(&o);
        assert!(err.contains("stop it first"), "{args:?}: {err}");
        assert!(err.contains(d(&data)), "{args:?}: {err}");
        assert!(!err.contains("Fjall"), "{args:?}: {err}");
    }
    s.stop();
}

#[test]
fn read_verbs_refuse_a_missing_data_dir_and_make_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("typo");
    let verbs: [&[&str]; 5] = [
        &["scan", "--data-dir", d(&data)],
        &["uid", "--data-dir", d(&data), "grep", "."],
        &["uid", "--data-dir", d(&data), "rename", "metrics", "a", "b"],
        &["fsck", "--data-dir", d(&data)],
        &[
            "query",
            "--data-dir",
            d(&data),
            "--start",
            "1h-ago",
            "sum:m",
        ],
    ];
    for args in verbs {
        let o = tsgate(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = stderr(&o);
        assert!(
            err.contains(&format!("no store in {}", d(&data))),
            "{args:?}: {err}"
        );
        assert!(!data.exists(), "{args:?} made {}", data.display());
    }
    // Nor does an import of a file that is not there.
    let missing = dir.path().join("missing.txt");
    let o = tsgate(&["import", "--quiet", "--data-dir", d(&data), d(&missing)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains(d(&missing)), "{}", stderr(&o));
    assert!(
        !data.exists(),
        "import of a missing file made {}",
        data.display()
    );
    // An existing but empty directory has no store either.
    std::fs::create_dir(&data).unwrap();
    let o = tsgate(&["scan", "--data-dir", d(&data)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(!data.join("store").exists());
}

#[test]
fn logs_have_no_colours_when_not_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let import = dir.path().join("points.txt");
    std::fs::write(&import, "m 1356998400 1 host=a\n").unwrap();
    // stderr is a pipe here, as it is when a service manager or `2>file` takes the log.
    let o = std::process::Command::new(bin())
        .args(["import", "--quiet", "--data-dir"])
        .arg(dir.path().join("data"))
        .arg(&import)
        .env_remove("NO_COLOR")
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("store opened"), "{err}");
    assert!(!err.contains('\x1b'), "{err:?}");
}
