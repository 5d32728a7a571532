package cryptflow_test

import (
	"context"
	"fmt"
	"log"
	"net"

	"github.com/cryptflow-go/cryptflow"
)

// Compile the bundled MNIST model with autotuning on its bundled validation images, serve it on a
// local port, and run one secure two-party inference as the client with the client copy.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// The model owner compiles the model: l and s are tuned on the validation folder.
	prog, err := cryptflow.Compile("testdata/mnist-small/model.onnx", cryptflow.CompileOptions{
		ValidationDir: "testdata/mnist-small/inputs"})
	if err != nil {
		log.Fatal(err)
	}
	// ... serves it (party 0, with the weights) ...
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- cryptflow.Serve(ctx, ln, prog, nil, nil) }()

	// ... and hands the client its copy, without the weights.
	client, err := prog.ClientCopy()
	if err != nil {
		log.Fatal(err)
	}
	x, err := client.ReadInput("testdata/mnist-small/inputs/00000.npy")
	if err != nil {
		log.Fatal(err)
	}
	res, err := cryptflow.Infer(ctx, ln.Addr().String(), client, x, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("class", res.Class)

	// The secure output equals the cleartext fixed-point run bitwise.
	clear, err := prog.Clear(ctx, x)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("equal to the clear run:", fmt.Sprint(clear.Raw) == fmt.Sprint(res.Raw))
	cancel()
	<-served
	// Output:
	// class 7
	// equal to the clear run: true
}

// InferLocal runs both parties in one process, for demonstrations and tests.
func ExampleInferLocal() {
	prog, err := cryptflow.Compile("testdata/mnist-small/model.onnx", cryptflow.CompileOptions{Bits: 32, Scale: 8, Backend: "scihe"})
	if err != nil {
		log.Fatal(err)
	}
	x, err := prog.ReadInput("testdata/mnist-small/inputs/00001.npy")
	if err != nil {
		log.Fatal(err)
	}
	res, err := cryptflow.InferLocal(context.Background(), prog, x, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s on Z_2^%d, scale %d: class %d\n", prog.Backend(), prog.Bits(), prog.Scale(), res.Class)
	// Output:
	// scihe on Z_2^32, scale 8: class 2
}

// Compile with class names (recorded in the program, as athosc --classes records them), serve,
// and run a batch of three inputs in one session as the client; each result carries its class's
// name, which travels with the client copy.
func Example_batchWithClassNames() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prog, err := cryptflow.Compile("testdata/mnist-small/model.onnx", cryptflow.CompileOptions{
		ValidationDir: "testdata/mnist-small/inputs",
		Classes:       []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}})
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- cryptflow.Serve(ctx, ln, prog, nil, nil) }()

	client, err := prog.ClientCopy()
	if err != nil {
		log.Fatal(err)
	}
	names := []string{"00000.npy", "00001.npy", "00002.npy"}
	var xs [][]float32
	for _, name := range names {
		x, err := client.ReadInput("testdata/mnist-small/inputs/" + name)
		if err != nil {
			log.Fatal(err)
		}
		xs = append(xs, x)
	}
	results, err := cryptflow.InferBatch(ctx, ln.Addr().String(), client, xs, nil) // one session
	if err != nil {
		log.Fatal(err)
	}
	for i, res := range results {
		fmt.Printf("%s: class %d %s\n", names[i], res.Class, res.ClassName)
	}
	cancel()
	<-served
	// Output:
	// 00000.npy: class 7 seven
	// 00001.npy: class 2 two
	// 00002.npy: class 1 one
}
