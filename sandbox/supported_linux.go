package sandbox

// supported reports whether bubblewrap can run here.
const supported = true
