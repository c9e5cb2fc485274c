<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Support;

/**
 * Reflection of classes as plain arrays, comparable between the stubs (in a php -n process) and the extension.
 *
 * Self-contained on purpose: the stub process requires this file alone, without the test bootstrap.
 */
final class ReflectionDump
{
    /**
     * @return array<string, mixed>
     */
    public static function ofClass(string $name): array
    {
        $class = new \ReflectionClass($name);
        $methods = [];
        foreach ($class->getMethods() as $method) {
            if ($method->getDeclaringClass()->getName() === $class->getName()) {
                $methods[$method->getName()] = self::ofMethod($method);
            }
        }
        ksort($methods);
        $properties = [];
        foreach ($class->getProperties() as $property) {
            if ($property->getDeclaringClass()->getName() === $class->getName()) {
                $properties[$property->getName()] = implode(' ', \Reflection::getModifierNames($property->getModifiers()))
                    .' '.($property->getType() ?? 'untyped');
            }
        }
        ksort($properties);
        $interfaces = $class->getInterfaceNames();
        sort($interfaces);
        $constants = [];
        foreach ($class->getReflectionConstants() as $constant) {
            if ($constant->getDeclaringClass()->getName() === $class->getName()) {
                $constants[$constant->getName()] = var_export($constant->getValue(), true);
            }
        }
        ksort($constants);

        return [
            'kind' => $class->isInterface() ? 'interface' : ($class->isTrait() ? 'trait' : 'class'),
            'final' => $class->isFinal(),
            'abstract' => $class->isAbstract() && !$class->isInterface(),
            'parent' => $class->getParentClass() ? $class->getParentClass()->getName() : null,
            'interfaces' => $interfaces,
            'constants' => $constants,
            'properties' => $properties,
            'methods' => $methods,
        ];
    }

    /**
     * @return array<string, mixed>
     */
    private static function ofMethod(\ReflectionMethod $method): array
    {
        $parameters = [];
        foreach ($method->getParameters() as $parameter) {
            $parameters[] = [
                'name' => $parameter->getName(),
                'type' => null === $parameter->getType() ? null : (string) $parameter->getType(),
                'nullable' => $parameter->allowsNull(),
                'optional' => $parameter->isOptional(),
                'default' => $parameter->isDefaultValueAvailable() ? var_export($parameter->getDefaultValue(), true) : null,
                'variadic' => $parameter->isVariadic(),
                'byReference' => $parameter->isPassedByReference(),
            ];
        }

        return [
            'visibility' => $method->isPublic() ? 'public' : ($method->isProtected() ? 'protected' : 'private'),
            'static' => $method->isStatic(),
            'final' => $method->isFinal(),
            'abstract' => $method->isAbstract(),
            'returnType' => $method->hasReturnType() ? (string) $method->getReturnType()
                : ($method->hasTentativeReturnType() ? 'tentative '.$method->getTentativeReturnType() : null),
            'parameters' => $parameters,
        ];
    }
}
