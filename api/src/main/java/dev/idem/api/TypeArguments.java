package dev.idem.api;

import java.lang.reflect.GenericArrayType;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.lang.reflect.TypeVariable;
import java.util.HashMap;
import java.util.Map;

/**
 * Reads {@code T} of {@code TypedHandler<T>} from a handler class's declaration, through its superclasses and
 * interfaces, with the JDK's reflection alone. Cached per class: {@link TypedHandler#payloadType()} runs for every
 * message. Thread-safe.
 */
final class TypeArguments {

    /** The payload type of each handler class, or the problem that stops it being read, as an exception to throw. */
    private static final ClassValue<Object> PAYLOAD_TYPES = new ClassValue<>() {
        @Override
        protected Object computeValue(Class<?> type) {
            Type found = find(type, TypedHandler.class, new HashMap<>());
            Class<?> raw = rawClass(found);
            if (raw != null) {
                return raw;
            }
            return new IllegalStateException(type.getName() + " does not say which type its payloads are: it should"
                    + " declare implements TypedHandler<SomeType> with a class for SomeType, or override payloadType()"
                    + (type.isSynthetic() || type.getName().contains("$$Lambda") ? "; for a lambda, use"
                            + " TypedHandler.of(SomeType.class, (payload, message, context) -> ...)" : ""));
        }
    };

    private TypeArguments() {
    }

    /** {@code T} of {@code TypedHandler<T>} as {@code handlerClass} declares it, as a class (a generic type's raw class). */
    static Class<?> payloadTypeOf(Class<?> handlerClass) {
        Object value = PAYLOAD_TYPES.get(handlerClass);
        if (value instanceof IllegalStateException problem) {
            throw new IllegalStateException(problem.getMessage());
        }
        return (Class<?>) value;
    }

    /**
     * The type argument {@code type} gives {@code target}'s single type parameter, resolving type variables bound by
     * the subclasses on the way ({@code bindings}); {@code null} when {@code type} does not extend {@code target}.
     */
    private static Type find(Type type, Class<?> target, Map<TypeVariable<?>, Type> bindings) {
        Class<?> raw;
        if (type instanceof ParameterizedType parameterized) {
            raw = (Class<?>) parameterized.getRawType();
            TypeVariable<?>[] variables = raw.getTypeParameters();
            Type[] arguments = parameterized.getActualTypeArguments();
            Map<TypeVariable<?>, Type> inner = new HashMap<>();
            for (int i = 0; i < variables.length; i++) {
                inner.put(variables[i], resolve(arguments[i], bindings));
            }
            if (raw == target) {
                return inner.get(variables[0]);
            }
            bindings = inner;
        } else if (type instanceof Class<?> c) {
            raw = c;
            if (raw == target) {
                return null; // the raw interface: no argument to read
            }
            bindings = Map.of();
        } else {
            return null;
        }
        if (!target.isAssignableFrom(raw)) {
            return null;
        }
        for (Type parent : raw.getGenericInterfaces()) {
            Type found = find(parent, target, bindings);
            if (found != null) {
                return found;
            }
        }
        Type superclass = raw.getGenericSuperclass();
        return superclass == null ? null : find(superclass, target, bindings);
    }

    private static Type resolve(Type type, Map<TypeVariable<?>, Type> bindings) {
        return type instanceof TypeVariable<?> variable ? bindings.getOrDefault(variable, variable) : type;
    }

    private static Class<?> rawClass(Type type) {
        if (type instanceof Class<?> c) {
            return c;
        }
        if (type instanceof ParameterizedType parameterized) {
            return (Class<?>) parameterized.getRawType();
        }
        if (type instanceof GenericArrayType array) {
            Class<?> component = rawClass(array.getGenericComponentType());
            return component == null ? null : component.arrayType();
        }
        return null;
    }
}
