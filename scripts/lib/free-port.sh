# free_port PHP: prints a loopback TCP port the kernel has just handed out and let go. A server started on it may
# still lose it to another process in the tiny window before it binds; the start scripts try again then.
free_port() {
  "$1" -n -r '$s = stream_socket_server("tcp://127.0.0.1:0"); $n = stream_socket_get_name($s, false);
    echo substr($n, strrpos($n, ":") + 1);'
}
