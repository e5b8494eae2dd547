//! The dashboard's built files (`ui/`) are embedded by `include_dir!`, which cargo does not
//! see: this makes a change to any of them rebuild the crate.

fn main() {
    println!("cargo:rerun-if-changed=ui");
}
