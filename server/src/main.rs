fn main() {
    std::process::exit(qp_server::cli::run());
}
