# free_port PHP: prints a loopback TCP port the kernel has just handed out and let go. A server started on it may
# still lose it to another process in the tiny window before it binds; the start scripts try again then.
free_port() {
  "$1" -n -r '$s = stream_socket_server("tcp://127.0.0.1:0"); $n = stream_socket_get_name($s, false);
    echo substr($n, strrpos($n, ":") + 1);'
}

# start_on_port PHP DIR START: runs `START PORT` on the port DIR/port recorded (a restart: the server comes back where
# its clients knew it), else on free ports, up to five (one lost before the server binds it is tried again), and
# records the port that served. Sets PORT; returns 1 when no start succeeded.
start_on_port() {
  local php=$1 dir=$2 start=$3 attempt
  if [ -f "$dir/port" ]; then
    PORT=$(cat "$dir/port")
    "$start" "$PORT"
    return
  fi
  for attempt in 1 2 3 4 5; do
    PORT=$(free_port "$php")
    if "$start" "$PORT"; then
      echo "$PORT" > "$dir/port"
      return 0
    fi
  done
  return 1
}
