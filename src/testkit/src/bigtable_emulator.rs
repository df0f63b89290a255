//! Google's Cloud Bigtable emulator (`cbtemulator`, from the `google-cloud-cli-bigtable-emulator`
//! package) as a child process of a test: started on a free port, killed when dropped.
//!
//! The package cannot be reinstalled here, so a test finds the binary where it is: a missing
//! binary skips the test with a loud message on a developer's machine, and fails it under CI
//! (`CI` set), where skipping would hide the whole backend's tests.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where the Debian package puts the emulator.
pub const DEFAULT_PATH: &str = "/usr/lib/google-cloud-sdk/platform/bigtable-emulator/cbtemulator";

pub struct Emulator {
    child: Child,
    addr: String,
}

/// The emulator binary: `$CBTEMULATOR`, else the package's path.
pub fn binary() -> Option<String> {
    let path = std::env::var("CBTEMULATOR").unwrap_or_else(|_| DEFAULT_PATH.to_string());
    std::path::Path::new(&path).is_file().then_some(path)
}

impl Emulator {
    /// Starts an emulator, or `None` (after saying so loudly) when the binary is missing on a
    /// machine without `CI` set. Panics under CI when it is missing, and whenever it fails.
    pub fn start() -> Option<Emulator> {
        Self::start_on(0)
    }

    /// As [`Emulator::start`], on a given port (0 = any free one).
    pub fn start_on(port: u16) -> Option<Emulator> {
        let Some(bin) = binary() else {
            let msg = format!(
                "the Cloud Bigtable emulator is not installed (looked at $CBTEMULATOR and {DEFAULT_PATH}; Debian package google-cloud-cli-bigtable-emulator)"
            );
            if std::env::var_os("CI").is_some() {
                panic!("{msg}: CI must run the Bigtable tests");
            }
            eprintln!("\n!!!!!!!! SKIPPED: {msg} !!!!!!!!\n");
            return None;
        };
        let mut child = Command::new(&bin)
            .args(["-host", "127.0.0.1", "-port", &port.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"));
        // It prints "Cloud Bigtable emulator running on 127.0.0.1:PORT" once it listens.
        let out = child.stdout.take().expect("piped stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(out).lines();
            while let Some(Ok(line)) = lines.next() {
                if let Some(addr) = line
                    .rsplit(' ')
                    .next()
                    .filter(|_| line.contains("running on"))
                {
                    let _ = tx.send(addr.to_string());
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        let addr = loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(addr) => break addr,
                Err(_) if Instant::now() < deadline => {
                    if let Ok(Some(status)) = child.try_wait() {
                        panic!("{bin} exited at start: {status}");
                    }
                }
                Err(_) => {
                    let _ = child.kill();
                    panic!("{bin} did not say where it listens within 30 s");
                }
            }
        };
        Some(Emulator { child, addr })
    }

    /// `host:port`, for `BIGTABLE_EMULATOR_HOST` or `storage.bigtable.emulator_host`.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The process id (to stop it from outside, as a test of a lost connection would).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
