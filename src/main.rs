use clap::Parser;

// Scans and ingest allocate many small buffers; mimalloc handles that far better than glibc's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let cli = tsgate::cli::Cli::parse();
    match tsgate::cli::run(cli) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("tsgate: {e:#}");
            std::process::exit(1);
        }
    }
}
