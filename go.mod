module github.com/peeragent/peeragent

go 1.26.0

godebug multipathtcp=0

require (
	github.com/google/go-cmp v0.7.0
	github.com/looplab/fsm v1.0.3
	golang.org/x/tools v0.52.0
	sigs.k8s.io/yaml v1.6.0
)

require (
	github.com/benbjohnson/immutable v0.4.3 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	golang.org/x/exp v0.0.0-20220518171630-0b5c67f07fdf // indirect
)
