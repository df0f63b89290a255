// Times the remote-write decode and normalisation steps over a directory of rw-*.bin files.
use prost::Message;
fn main() {
    let dir = std::env::args().nth(1).expect("dir");
    let mut files: Vec<Vec<u8>> = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.file_name().unwrap().to_string_lossy().starts_with("rw-") {
            files.push(std::fs::read(p).unwrap());
        }
    }
    let t = std::time::Instant::now();
    let raws: Vec<Vec<u8>> = files
        .iter()
        .map(|f| tsgate_prometheus::snappy::decompress(f, 1 << 30).unwrap())
        .collect();
    println!("snappy {:?}", t.elapsed());
    let t = std::time::Instant::now();
    let mut n = 0;
    for r in &raws {
        n += tsgate_prometheus::proto::WriteRequest::decode(r.as_slice())
            .unwrap()
            .timeseries
            .len();
    }
    println!(
        "prost decode (for comparison) {:?} ({n} series)",
        t.elapsed()
    );
    let t = std::time::Instant::now();
    let mut n = 0;
    for r in &raws {
        tsgate_prometheus::v1_borrowed::decode(
            r,
            |s| {
                n += s.samples.len();
                Ok(())
            },
            |_| {},
        )
        .unwrap();
    }
    println!("borrowed decode only {:?} ({n} samples)", t.elapsed());
    let t = std::time::Instant::now();
    let mut n = 0;
    for r in &raws {
        n += tsgate::prometheus::write::from_v1(r, 32, &|_| None)
            .unwrap()
            .samples
            .len();
    }
    println!(
        "borrowed decode + normalise {:?} ({n} samples)",
        t.elapsed()
    );
}
