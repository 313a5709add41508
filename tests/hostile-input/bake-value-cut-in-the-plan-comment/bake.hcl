variable "LEAK" { default = "x" }
target "leak" { tags = ["{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com/leak-${LEAK}"] }
