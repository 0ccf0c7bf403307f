// This module builds the agent's container image (make image); it is not
// part of github.com/peeragent/peeragent, so go-containerregistry's
// dependencies never move the agent's. See README.md.
module github.com/peeragent/peeragent/tools/image

go 1.26.0

require github.com/google/go-containerregistry v0.22.1

require (
	github.com/klauspost/compress v1.19.2 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.1 // indirect
)
