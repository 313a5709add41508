variable "ECR_REGISTRY" { default = "zot.fleet:5000" }
variable "CACHE" { default = "${ECR_REGISTRY}/cache" }
group "default" { targets = ["pytorch", "foo"] }
target "_cache" { cache-to = ["type=registry,ref=${ECR_REGISTRY}/pytorch-cache:c,mode=max,ignore-error=true"] }
target "pytorch" {
  inherits = ["_cache"]
  tags = ["${ECR_REGISTRY}/pytorch:nightly"]
}
target "foo" {
  inherits = ["pytorch"]
  tags = ["${ECR_REGISTRY}/foo:nightly"]
  cache-from = ["type=registry,ref=${CACHE}:x"]
}
