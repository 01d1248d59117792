"""The dataset tests read our datasets through ir_datasets: registering them is an explicit call
(`reteco_measures.datasets.register`), made once here for the whole folder."""

import reteco_measures as rm

rm.datasets.register()
