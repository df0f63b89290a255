use clap::Parser;

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
