target "a" {
  AWS_SECRET_ACCESS_KEY={CANARY} ==
}
