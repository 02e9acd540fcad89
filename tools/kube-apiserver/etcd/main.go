// Command etcd is etcd's server (go.etcd.io/etcd/server/v3, the version in go.mod) for the tests:
// the same entry point as the etcd binary of that release.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
