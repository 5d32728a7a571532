module github.com/cryptflow-go/cryptflow

go 1.26

require (
	filippo.io/edwards25519 v1.2.0
	github.com/alecthomas/participle/v2 v2.1.4
	gonum.org/v1/gonum v0.17.0
	google.golang.org/protobuf v1.36.12
)
