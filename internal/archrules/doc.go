// Package archrules holds no code: its test checks the project's layering against `go list`
// (nothing under protocols/ imports vm, ir, passes or frontend; vm imports only the ring package of
// protocols/; the compiler links neither lattigo nor the protocols' transport; no command links
// the insecure test backend; scirun does not link the text parser)
// and keeps the package table in docs/architecture.md equal to what `go list` reports.
package archrules
