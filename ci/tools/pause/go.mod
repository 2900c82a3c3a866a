// pause: the sandbox process of every pod on the real node (the pause image's only file).
module dihera.local/tools/pause

go 1.25.0
