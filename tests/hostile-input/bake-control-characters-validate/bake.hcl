target "x" { tags = ["123456789012.dkr.ecr.us-east-1.amazonaws.com/x\u001b[2J\u0007\n::error title=pwned::owned\u202e:t"] }
