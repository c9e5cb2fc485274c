<?php

// The calling side of fuzz_child.php (coercive typing mode: the mode of the file that makes a call decides it).

function fz_invoke(callable|array|string $callable, array $args): mixed
{
    return $callable(...$args);
}

function fz_new(string $class, array $args): object
{
    return new $class(...$args);
}
