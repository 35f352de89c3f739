"""ODE integration (JAX's `jax.experimental.ode`): `odeint` and the Dormand-Prince pieces JAX's
module exposes beside it."""
from revax._src.experimental.ode import abs2 as abs2
from revax._src.experimental.ode import fit_4th_order_polynomial as fit_4th_order_polynomial
from revax._src.experimental.ode import initial_step_size as initial_step_size
from revax._src.experimental.ode import interp_fit_dopri as interp_fit_dopri
from revax._src.experimental.ode import mean_error_ratio as mean_error_ratio
from revax._src.experimental.ode import odeint as odeint
from revax._src.experimental.ode import optimal_step_size as optimal_step_size
from revax._src.experimental.ode import ravel_first_arg as ravel_first_arg
from revax._src.experimental.ode import runge_kutta_step as runge_kutta_step
