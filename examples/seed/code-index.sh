# A stand-in for the code-index server: it indexes the project into
# index/ (a folder present at launch: the top level is fixed) and then
# waits on its stdin as a stdio MCP server does.
ls -R src > index/files.txt && echo "code-index: indexed src into index/files.txt" >&2
exec cat > /dev/null
