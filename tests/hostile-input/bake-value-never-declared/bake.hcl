variable "LEAK" { default = "x" }
target "leak" { tags = ["123456789012.dkr.ecr.us-east-1.amazonaws.com/leak-${LEAK}"] }
