target "a" { inherits = ["b"] }
target "b" { inherits = ["c"] }
target "c" { inherits = ["a"] }
