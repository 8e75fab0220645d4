// etcd for the kube-apiserver the tests start; built from the module proxy by the harness.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
