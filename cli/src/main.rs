mod sim_env;

fn main() {
    let _ = sim_env::exports;
}
