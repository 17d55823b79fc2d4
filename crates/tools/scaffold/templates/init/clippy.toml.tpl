# In tests an unwrap is the assertion (Cargo.toml's [lints] warn about it elsewhere).
allow-unwrap-in-tests = true
