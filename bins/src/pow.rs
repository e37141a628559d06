//! `pow`, the one C math function the binary calls, defined here so that
//! the binary does not load libm.so for it.
//!
//! tokio's multi-threaded scheduler weighs its tasks' poll times with
//! `f64::powf`, which Rust compiles to a call to C's `pow`; nothing else
//! in the binary needs libm. Every shared library costs every process
//! that loads it — found, mapped, relocated, unmapped at exit — about
//! 0.1 ms on this machine, and `warden call` is a whole process per call
//! (its goal is 2 ms in all). An executable's own definition of a symbol
//! comes first, so the linker's `--as-needed` then drops libm.so.
//!
//! The definition is the `libm` crate's, rust-lang's port of musl's
//! (what Rust's compiler-builtins use), accurate to within an ulp. Should
//! another C math function come to be called, libm.so is loaded again for
//! it and nothing breaks: only this saving is lost.

/// C's `pow(x, y)`: `x` raised to the power `y`.
#[no_mangle]
pub(crate) extern "C" fn pow(x: f64, y: f64) -> f64 {
    libm::pow(x, y)
}

#[cfg(test)]
mod tests {
    use super::pow;

    #[test]
    fn pow_answers_as_c_s_does() {
        assert_eq!(pow(2.0, 10.0), 1024.0);
        assert_eq!(pow(9.0, 0.5), 3.0);
        assert_eq!(pow(10.0, -2.0), 0.01);
        assert_eq!(pow(0.0, 0.0), 1.0);
        assert_eq!(pow(f64::INFINITY, -1.0), 0.0);
        assert!(pow(-8.0, 1.0 / 3.0).is_nan());
        // tokio's use: the weight left after n polls, 0.9^n, within an ulp.
        assert!((pow(0.9, 7.0) - 0.478_296_9).abs() < 1e-15);
    }
}
