"""revax.experimental.ode: odeint, as jax.experimental.ode."""
from revax._src.ode import odeint as odeint
