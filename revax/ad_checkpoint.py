"""revax.ad_checkpoint: rematerialization, as jax.ad_checkpoint."""
from revax._src.ad_checkpoint import checkpoint as checkpoint
from revax._src.ad_checkpoint import checkpoint_name as checkpoint_name
from revax._src.ad_checkpoint import checkpoint_policies as checkpoint_policies
from revax._src.ad_checkpoint import print_saved_residuals as print_saved_residuals
from revax._src.ad_checkpoint import remat as remat
from revax._src.ad_checkpoint import saved_residuals as saved_residuals
