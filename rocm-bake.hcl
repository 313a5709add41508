# The nightly's bake file (desired.toml names it), as this repository keeps a copy of it for the
# demo and the tests: every target pushes its image to the registry and exports its BuildKit
# cache (mode=max, every intermediate layer) to its own `-cache` repository, which the next
# night imports. The registry defaults to the fleet's Zot; the nightly sets ECR_REGISTRY to the
# account's ECR registry.
variable "ECR_REGISTRY" {
  default = "zot.fleet.internal:5000"
}

variable "REGISTRY_INSECURE" {
  default = true
}

variable "TAG" {
  default = "nightly"
}

group "default" {
  targets = ["rocm-base", "pytorch-base", "triton-wheel", "pytorch-wheel", "pytorch", "torchvision-wheel", "torchaudio-wheel", "aiter-wheel", "atom-wheel", "flash-attention-wheel", "vllm-wheel", "vllm", "sglang-wheel", "sglang"]
}

target "rocm-base" {
  dockerfile = "docker/rocm-base.Dockerfile"
  tags = ["${ECR_REGISTRY}/rocm-base:${TAG}"]
}

target "pytorch-base" {
  dockerfile = "docker/pytorch-base.Dockerfile"
  tags = ["${ECR_REGISTRY}/pytorch-base:${TAG}"]
  contexts = { base = "target:rocm-base" }
  cache-from = ["type=registry,ref=${ECR_REGISTRY}/pytorch-base-cache:buildcache"]
  cache-to = ["type=registry,ref=${ECR_REGISTRY}/pytorch-base-cache:buildcache,mode=max,ignore-error=true"]
}

target "triton-wheel" {
  dockerfile = "docker/triton-wheel.Dockerfile"
  tags = ["${ECR_REGISTRY}/triton-wheel:${TAG}"]
  contexts = { base = "target:pytorch-base" }
  cache-from = ["type=registry,ref=${ECR_REGISTRY}/triton-wheel-cache:buildcache"]
  cache-to = ["type=registry,ref=${ECR_REGISTRY}/triton-wheel-cache:buildcache,mode=max,ignore-error=true"]
}

target "pytorch-wheel" {
  dockerfile = "docker/pytorch-wheel.Dockerfile"
  tags = ["${ECR_REGISTRY}/pytorch-wheel:${TAG}"]
  contexts = { base = "target:pytorch-base" }
  cache-from = ["type=registry,ref=${ECR_REGISTRY}/pytorch-wheel-cache:buildcache"]
  cache-to = ["type=registry,ref=${ECR_REGISTRY}/pytorch-wheel-cache:buildcache,mode=max,ignore-error=true"]
}

target "pytorch" {
  dockerfile = "docker/pytorch.Dockerfile"
  tags = ["${ECR_REGISTRY}/pytorch:${TAG}"]
  contexts = { base = "target:pytorch-wheel" }
  cache-from = ["type=registry,ref=${ECR_REGISTRY}/pytorch-cache:buildcache"]
  cache-to = ["type=registry,ref=${ECR_REGISTRY}/pytorch-cache:buildcache,mode=max,ignore-error=true"]
}

target "torchvision-wheel" {
  dockerfile = "docker/torchvision-wheel.Dockerfile"
  tags = ["${ECR_REGISTRY}/torchvision-wheel:${TAG}"]
  contexts = { base = "target:pytorch" }
  cache-from = ["type=registry,ref=${ECR_REGISTRY}/torchvision-wheel-cache:buildcache"]
  cache-to = ["type=registry,ref=${ECR_REGISTRY}/torchvision-wheel-cache:buildcache,mode=max,ignore-error=true"]
}

target "torchaudio-wheel" {
  dockerfile = "docker/torchaudio-wheel.Dockerfile"
  tags = ["${ECR_REGISTRY}/torchaudio-wheel:${TAG}"]
  contexts = { base = "target:pytorch" }
  cache-from = ["type=registry,ref=${ECR_REGISTRY}/torchaudio-wheel-cache:buildcache"]
  cache-to = ["type=registry,ref=${ECR_REGISTRY}/torchaudio-wheel-cache:buildcache,mode=max,ignore-error=true"]
}

target "aiter-wheel" {
  dockerfile = "docker/aiter-wheel.Dockerfile"
  tags = ["${ECR_REGISTRY}/aiter-wheel:${TAG}"]
  contexts = { base = "target:pytorch" }
  cache-from = ["type=registry,ref=${ECR_REGISTRY}/aiter-wheel-cache:buildcache"]
  cache-to = ["type=registry,ref=${ECR_REGISTRY}/aiter-wheel-cache:buildcache,mode=max,ignore-error=true"]
}

target "atom-wheel" {
  dockerfile = "docker/atom-wheel.Dockerfile"
  tags = ["${ECR_REGISTRY}/atom-wheel:${TAG}"]
  contexts = { base = "target:pytorch" }
  cache-from = ["type=registry,ref=${ECR_REGISTRY}/atom-wheel-cache:buildcache"]
  cache-to = ["type=registry,ref=${ECR_REGISTRY}/atom-wheel-cache:buildcache,mode=max,ignore-error=true"]
}

target "flash-attention-wheel" {
  dockerfile = "docker/flash-attention-wheel.Dockerfile"
  tags = ["${ECR_REGISTRY}/flash-attention-wheel:${TAG}"]
  contexts = { base = "target:pytorch" }
  cache-from = ["type=registry,ref=${ECR_REGISTRY}/flash-attention-wheel-cache:buildcache"]
  cache-to = ["type=registry,ref=${ECR_REGISTRY}/flash-attention-wheel-cache:buildcache,mode=max,ignore-error=true"]
}

target "vllm-wheel" {
  dockerfile = "docker/vllm-wheel.Dockerfile"
  tags = ["${ECR_REGISTRY}/vllm-wheel:${TAG}"]
  contexts = { base = "target:pytorch" }
  cache-from = ["type=registry,ref=${ECR_REGISTRY}/vllm-wheel-cache:buildcache"]
  cache-to = ["type=registry,ref=${ECR_REGISTRY}/vllm-wheel-cache:buildcache,mode=max,ignore-error=true"]
}

target "vllm" {
  dockerfile = "docker/vllm.Dockerfile"
  tags = ["${ECR_REGISTRY}/vllm:${TAG}"]
  contexts = { base = "target:vllm-wheel" }
  cache-from = ["type=registry,ref=${ECR_REGISTRY}/vllm-cache:buildcache"]
  cache-to = ["type=registry,ref=${ECR_REGISTRY}/vllm-cache:buildcache,mode=max,ignore-error=true"]
}

target "sglang-wheel" {
  dockerfile = "docker/sglang-wheel.Dockerfile"
  tags = ["${ECR_REGISTRY}/sglang-wheel:${TAG}"]
  contexts = { base = "target:pytorch" }
  cache-from = ["type=registry,ref=${ECR_REGISTRY}/sglang-wheel-cache:buildcache"]
  cache-to = ["type=registry,ref=${ECR_REGISTRY}/sglang-wheel-cache:buildcache,mode=max,ignore-error=true"]
}

target "sglang" {
  dockerfile = "docker/sglang.Dockerfile"
  tags = ["${ECR_REGISTRY}/sglang:${TAG}"]
  contexts = { base = "target:sglang-wheel" }
  cache-from = ["type=registry,ref=${ECR_REGISTRY}/sglang-cache:buildcache"]
  cache-to = ["type=registry,ref=${ECR_REGISTRY}/sglang-cache:buildcache,mode=max,ignore-error=true"]
}
