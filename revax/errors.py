"""revax.errors: the exception classes revax raises, with jax.errors' names and bases."""
from revax._src.core.errors import ConcretizationTypeError as ConcretizationTypeError
from revax._src.core.errors import InconclusiveDimensionOperation as InconclusiveDimensionOperation
from revax._src.core.errors import JAXIndexError as JAXIndexError
from revax._src.core.errors import JAXTypeError as JAXTypeError
from revax._src.core.errors import JaxRuntimeError as JaxRuntimeError
from revax._src.core.errors import JaxprTypeError as JaxprTypeError
from revax._src.core.errors import KeyReuseError as KeyReuseError
from revax._src.core.errors import NonConcreteBooleanIndexError as NonConcreteBooleanIndexError
from revax._src.core.errors import TracerArrayConversionError as TracerArrayConversionError
from revax._src.core.errors import TracerBoolConversionError as TracerBoolConversionError
from revax._src.core.errors import TracerIntegerConversionError as TracerIntegerConversionError
from revax._src.core.errors import UnexpectedTracerError as UnexpectedTracerError
