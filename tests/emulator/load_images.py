"""Loads the emulator with many ECR images, for scripts/bench-usage.sh.

Each repository `bench-<n>` gets `--images` images: a tenth tagged, the rest untagged, each of
its own size (moto sizes an image by its manifest's `config.size`). Endpoint and credentials
come from the standard AWS environment.
"""

import argparse
import json
from concurrent.futures import ThreadPoolExecutor

import boto3


def manifest(repository, index):
    seed = f"{repository}-{index}"
    return json.dumps({
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "size": 1_000_000 + index, "digest": f"sha256:{seed}c"},
        "layers": [{"mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip", "size": 1, "digest": f"sha256:{seed}l"}],
    })


def load(client, repository, images):
    client.create_repository(repositoryName=repository)
    for index in range(images):
        extra = {"imageTag": f"v{index}"} if index % 10 == 0 else {}
        client.put_image(repositoryName=repository, imageManifest=manifest(repository, index), **extra)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repositories", type=int, required=True)
    parser.add_argument("--images", type=int, required=True)
    args = parser.parse_args()
    client = boto3.client("ecr", region_name="us-east-1")
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda n: load(client, f"bench-{n}", args.images), range(args.repositories)))


if __name__ == "__main__":
    main()
