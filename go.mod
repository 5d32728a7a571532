module github.com/cryptflow-go/cryptflow

go 1.26

require (
	filippo.io/edwards25519 v1.2.0 // indirect
	github.com/alecthomas/participle/v2 v2.1.4 // indirect
	gonum.org/v1/gonum v0.17.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
