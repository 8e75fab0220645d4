// Command harness builds the test harness (`make harness`): every program the tests run that is
// not gpucluster's own code, into the cache directory, each once; then it compiles the programs of
// this module the real-engine tests run (the gpucluster CLI and the aws provider double), so that
// no test compiles them inside its timeout. Run it as often as you like: what is built for the
// current sources costs nothing, and two runs at once take turns per program.
//
//	go run ./test/harness/cmd/harness [-j 2] [-only name,name]
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gpucluster/gpucluster/test/harness"
	"github.com/gpucluster/gpucluster/test/kubeapi"
)

func main() {
	parallel := flag.Int("j", 2, "programs built at once (each go build also uses every core)")
	only := flag.String("only", "", "build only these programs, comma-separated (default: all)")
	flag.Parse()
	programs := harness.Programs
	if *only != "" {
		programs = nil
		for _, name := range strings.Split(*only, ",") {
			i := slices.IndexFunc(harness.Programs, func(p harness.Program) bool { return p.Name == name })
			if i < 0 {
				fmt.Fprintf(os.Stderr, "harness: no program %q (have %s)\n", name, names())
				os.Exit(2)
			}
			programs = append(programs, harness.Programs[i])
		}
	}
	cache, err := harness.CacheDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		os.Exit(1)
	}
	fmt.Printf("harness: building into %s (set %s to move it)\n", cache, harness.EnvCache)
	start := time.Now()
	if _, err := harness.Build(os.Stdout, programs, *parallel); err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		os.Exit(1)
	}
	if *only == "" {
		if err := downloadAWSSDK(); err != nil {
			fmt.Fprintln(os.Stderr, "harness:", err)
			os.Exit(1)
		}
		if err := fetchKarpenter(); err != nil {
			fmt.Fprintln(os.Stderr, "harness:", err)
			os.Exit(1)
		}
		if err := compileOwnPrograms(); err != nil {
			fmt.Fprintln(os.Stderr, "harness:", err)
			os.Exit(1)
		}
	}
	fmt.Printf("harness: ready in %s\n", time.Since(start).Round(time.Second))
}

// compileOwnPrograms builds the gpucluster CLI, its chart renderer, and the aws provider double
// and CLI stand-in where the real-engine tests find them (harness.BuildOwn): no test then
// compiles the Pulumi SDKs or Helm, or links these programs, inside its timeout.
func compileOwnPrograms() error {
	start := time.Now()
	dir, err := harness.BuildOwn()
	if err != nil {
		return err
	}
	fmt.Printf("harness: %-11s built in %s (the gpucluster CLI and its chart renderer, the aws provider double and CLI stand-in, this module, in %s)\n",
		"gpucluster", time.Since(start).Round(time.Second), dir)
	return nil
}

// downloadAWSSDK puts the pulumi-aws SDK that pulumi-eks's plugin bundles into the module cache:
// the aws double reads each version's schema from it (go.mod's version is there already).
func downloadAWSSDK() error {
	v, err := harness.BundledNPMVersion("@pulumi/aws")
	if err != nil {
		return err
	}
	start := time.Now()
	if err := harness.DownloadAWSSDK(v); err != nil {
		return err
	}
	fmt.Printf("harness: %-11s in the module cache in %s (the pulumi-aws Go SDK %s, the schema of the aws provider pulumi-eks's children ask for)\n",
		"aws-sdk", time.Since(start).Round(time.Second), v)
	return nil
}

// fetchKarpenter puts the Karpenter release the tests read (CRDs, chart, generated tables) into
// the cache, so that no test fetches it inside its timeout.
func fetchKarpenter() error {
	start := time.Now()
	dir, err := kubeapi.KarpenterModuleDir()
	if err != nil {
		return err
	}
	fmt.Printf("harness: %-11s in %s in %s (karpenter-provider-aws %s: CRDs, chart, generated tables)\n",
		"karpenter", dir, time.Since(start).Round(time.Second), kubeapi.KarpenterVersion)
	return nil
}

func names() string {
	var n []string
	for _, p := range harness.Programs {
		n = append(n, p.Name)
	}
	return strings.Join(n, ", ")
}
