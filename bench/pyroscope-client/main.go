// A Pyroscope Go client (github.com/grafana/pyroscope-go) pushing to the
// server given as the first argument: every Go profile type, a tag, a
// TagWrapper label, a CPU-bound loop for 7 s.  Run by
// bench/pyroscope-client.sh.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/grafana/pyroscope-go"
)

var sink []byte

func hotLoop(d time.Duration) uint64 {
	var x uint64
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		for i := 0; i < 100000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		sink = make([]byte, 4096)
	}
	return x
}

func main() {
	p, err := pyroscope.Start(pyroscope.Config{
		ApplicationName: "goapp",
		ServerAddress:   os.Args[1],
		Tags:            map[string]string{"env": "test"},
		UploadRate:      2 * time.Second,
		ProfileTypes: []pyroscope.ProfileType{pyroscope.ProfileCPU, pyroscope.ProfileAllocObjects,
			pyroscope.ProfileAllocSpace, pyroscope.ProfileInuseObjects, pyroscope.ProfileInuseSpace},
		Logger: pyroscope.StandardLogger,
	})
	if err != nil {
		fmt.Println("start:", err)
		os.Exit(1)
	}
	pyroscope.TagWrapper(context.Background(), pyroscope.Labels("endpoint", "/checkout"), func(c context.Context) {
		fmt.Println(hotLoop(7 * time.Second))
	})
	p.Stop()
}
