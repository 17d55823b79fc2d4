# Tests may unwrap: a panic there is a failed test with its line.
allow-unwrap-in-tests = true
allow-expect-in-tests = true
