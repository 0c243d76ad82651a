//! `uniffi-bindgen`, pinned to the same uniffi as qp-core: generator and
//! library must match, or the bindings fail at load time with a checksum error.
fn main() {
    uniffi::uniffi_bindgen_main()
}
