//go:build !unix

package atomicfile

import "os"

// Without flock a temporary file is never known to be stale: RemoveStale removes none.
const staleKnown = false

func tryLock(*os.File) (bool, error) { return true, nil }

func unlinked(*os.File) (bool, error) { return false, nil }

const noFollow = 0
