package bench

// The tests open s3:// and gs:// state stores in this process, as the binaries do: they link the schemes as the
// binaries' mains do.
import (
	_ "kubeup.dev/kubeup/statestore/gsstore"
	_ "kubeup.dev/kubeup/statestore/s3store"
)
