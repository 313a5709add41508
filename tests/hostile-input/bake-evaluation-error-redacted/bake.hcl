variable "LEAK" { default = "" }
target "t" { tags = ["${LEAK}" + 1] }
